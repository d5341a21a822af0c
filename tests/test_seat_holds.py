"""Seats as records (CONTRACT "Additions (sixth round)", "Changes to the fifth round"): a declined seat is
held for its invitee until Stripe's pending update is paid or dropped, every other seat change waits for
it, and an organisation's first subscription counts its members under the organisation's lock.

Each test reproduces a finding of issue 42 (amounts in minor units, basic 900 a seat) and shows it now
gains nothing: through HTTP, the real stripe SDK, the emulator and its real webhooks.
"""
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from threading import Barrier

import pytest
import requests
from sqlalchemy import select, update

from app.billing.call_costs import PROVIDER_CALL_COSTS
from app.extensions import db
from app.models import SeatChange
from app.models.organization import Invitation
from app.timeutil import utcnow
from tests.support.billing import measured, start_flow
from tests.support.organizations import SEAT, Team, charged, declined_seat, me, pay_on_stripes_page
from tests.support.selling import URLS, complete


@pytest.fixture
def team(live, emulator, stripe_client, prices):
    return Team(start_flow(live, emulator, stripe_client, prices))


def kinds(team, headers):
    return [n["kind"] for n in team.client.get("/notifications?limit=100", headers=headers).json["data"]]


def test_a_declined_seat_paid_later_admits_its_invitee_once(team):
    """Before: paying the declined seat's invoice admitted nobody, `flask reconcile` set the quantity back
    without a credit, and the invitee paid again: 1,800 for one seat. Now the webhook of the paid invoice
    admits the invitee and tells both sides; reconcile finds nothing to fix: 900 for one seat."""
    subscription_id, invitation, invoice = declined_seat(team, "cy")
    assert team.client.get(team.base, headers=team.ada).json["seats"] == {"members": 1, "invitations": 1, "paid": 1}
    before = charged(team, subscription_id)
    pay_on_stripes_page(invoice)
    team.flow.deliver()
    assert team.members() == 2 and team.stripe_quantity(subscription_id) == 2
    assert "invitation_accepted" in kinds(team, team.headers["cy"]) and "member_joined" in kinds(team, team.ada)
    assert team.client.get(team.base, headers=team.headers["cy"]).json["role"] == "member"
    again = team.accept("cy", invitation)
    assert again.status_code == 400 and again.json["error"]["code"] == "invalid_token", "the invitation is used"
    reconciled = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert reconciled.exit_code == 0 and "seats 2 -> 1" not in reconciled.output, reconciled.output
    assert team.stripe_quantity(subscription_id) == team.members() == 2
    assert charged(team, subscription_id) - before == SEAT


def test_an_invitee_accepting_again_once_their_held_seat_is_paid_joins_by_it_and_pays_nothing_more(team):
    """Review finding: the invitee accepted again after the held invoice was paid, before its webhook came. The
    held seat was settled from Stripe (admitting them), then counted with the accept's own seat: a second seat
    was charged (900) and the accept ended in a 500 on a duplicate membership. Now they join by the paid seat."""
    subscription_id, invitation, invoice = declined_seat(team, "cy")
    before = charged(team, subscription_id)
    pay_on_stripes_page(invoice)
    again = team.accept("cy", invitation)
    assert again.status_code == 200 and again.json["id"] == team.org, again.json
    assert team.client.get(team.base, headers=team.headers["cy"]).json["role"] == "member"
    assert team.stripe_quantity(subscription_id) == team.members() == 2
    assert charged(team, subscription_id) - before == SEAT, "one seat, paid once"
    team.flow.deliver()
    assert team.stripe_quantity(subscription_id) == team.members() == 2
    assert kinds(team, team.headers["cy"]).count("invitation_accepted") == 1
    assert team.accept("cy", invitation).json["error"]["code"] == "invalid_token", "the invitation is used"


def test_a_removal_during_a_pending_seat_charge_waits_for_it(team):
    """Before: a removal while a seat's charge was pending was credited 900, and paying the pending invoice
    then applied the old absolute quantity: a seat nobody paid for, each round. Now every seat change waits
    (409) until the pending one is paid or dropped; after it the quantity is the members."""
    team.join("bob")
    subscription_id, _, invoice = declined_seat(team, "cy")
    bob = me(team, "bob")
    removed = team.client.delete(f"{team.base}/members/{bob}", headers=team.ada)
    assert removed.status_code == 409 and removed.json["error"]["code"] == "payment_pending", removed.json
    left = team.client.delete(f"{team.base}/members/{bob}", headers=team.headers["bob"])
    assert left.status_code == 409 and team.members() == 2
    pay_on_stripes_page(invoice)
    team.flow.deliver()
    assert team.stripe_quantity(subscription_id) == team.members() == 3
    assert team.client.delete(f"{team.base}/members/{bob}", headers=team.ada).status_code == 204
    assert team.stripe_quantity(subscription_id) == team.members() == 2


def test_a_lost_webhook_does_not_lose_the_paid_seat(team):
    """The invoice is paid but its webhooks have not arrived: the next seat change asks Stripe first, admits
    the invitee whose seat was paid, and counts them."""
    team.join("bob")
    subscription_id, _, invoice = declined_seat(team, "cy")
    pay_on_stripes_page(invoice)  # webhooks not delivered
    status, calls = measured(team.flow, lambda: team.client.delete(f"{team.base}/members/{me(team, 'bob')}",
                                                                   headers=team.ada))
    assert status == 204 and calls <= PROVIDER_CALL_COSTS["organizations.remove"], (status, calls)
    assert team.members() == 2 and team.stripe_quantity(subscription_id) == 2  # Ada and Cy
    team.flow.deliver()
    assert team.members() == 2 and team.stripe_quantity(subscription_id) == 2
    assert team.client.get(team.base, headers=team.headers["cy"]).status_code == 200


def test_an_unpaid_hold_ends_when_stripe_drops_the_change_and_the_invitation_stays(team):
    subscription_id, invitation, _ = declined_seat(team, "cy")
    team.flow.emulator.control("POST", "clock/advance", {"seconds": 23 * 3600 + 60})
    team.flow.deliver()
    with team.app.app_context():
        statuses = db.session.scalars(select(SeatChange.status).where(SeatChange.organization_id == team.org)).all()
    assert statuses == ["expired"], statuses
    assert team.members() == 1 and team.stripe_quantity(subscription_id) == 1
    assert team.client.get(team.base, headers=team.ada).json["seats"] == {"members": 1, "invitations": 1, "paid": 1}
    customer = team.flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    method = team.flow.stripe.v1.payment_methods.attach("pm_card_visa", params={"customer": customer})
    team.flow.stripe.v1.subscriptions.update(subscription_id, params={"default_payment_method": method.id})
    team.flow.deliver()
    assert team.accept("cy", invitation).status_code == 200, "the same invitation, once the card works"
    assert team.stripe_quantity(subscription_id) == team.members() == 2


def test_members_accepting_while_the_organizations_checkout_opens_each_get_a_paid_seat(team):
    """Before: Checkout counted the members before the organisation's lock, so invitees accepting while it
    opened joined unpaid (4 members for 900, 11 of 11 tries). Now the seats are read under the lock: an
    accept either lands before (counted) or waits and finds the page open (409)."""
    names = ("bob", "cy", "dee")
    invitations = {}
    for name in names:
        team.person(name)
        invitations[name] = team.invite(name)
    start = Barrier(len(names) + 1)

    def checkout():
        start.wait()
        return requests.post(f"{team.flow.base_url}{team.base}/subscription/checkout", headers=team.ada,
                             json={"price": team.flow.prices["basic"], **URLS}, timeout=30)

    def accept(name):
        start.wait()
        return requests.post(f"{team.flow.base_url}/organizations/invitations/accept", headers=team.headers[name],
                             json={"token": team.token(invitations[name])}, timeout=30)

    with ThreadPoolExecutor(len(names) + 1) as pool:
        opened = pool.submit(checkout)
        accepts = [pool.submit(accept, name) for name in names]
        session = opened.result()
        answers = [answer.result().status_code for answer in accepts]
    assert session.status_code == 201, session.json()
    assert set(answers) <= {200, 409}, answers
    subscription_id = complete(team.flow, session.json()["id"])["subscription"]
    team.flow.deliver()
    assert team.stripe_quantity(subscription_id) == team.members(), "every member has a paid seat"
    assert charged(team, subscription_id) == SEAT * team.members()


def test_reconcile_leaves_a_held_seat_to_stripe(team):
    """While Stripe holds the declined seat's pending update, the members plus the held seat are not drift:
    setting the quantity then would give the seat for nothing (``proration_behavior=none``)."""
    subscription_id, _, invoice = declined_seat(team, "cy")
    reconciled = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert reconciled.exit_code == 0 and "seats 1 -> 2" not in reconciled.output, reconciled.output
    assert team.stripe_quantity(subscription_id) == 1 and team.members() == 1
    pay_on_stripes_page(invoice)
    team.flow.deliver()
    assert team.stripe_quantity(subscription_id) == team.members() == 2


def _holds(team):
    with team.app.app_context():
        return db.session.scalars(select(SeatChange.status).where(SeatChange.organization_id == team.org)).all()


def test_an_invitation_a_held_seat_waits_on_is_not_replaced_once_it_expires(team):
    """Review finding: accepted in its last day, its seat held, the invitation expired, and inviting the address
    again deleted it; paying the held invoice then charged 900 and admitted nobody, and the new invitation's accept
    charged the seat again. Now inviting the address is refused (409 ``already_invited``) while the seat is held,
    the invitation stays listed (so it can be revoked, which withdraws the seat: second review), and paying the held
    invoice admits the invitee: 900 once."""
    subscription_id, invitation, invoice = declined_seat(team, "cy")
    before = charged(team, subscription_id)
    with team.app.app_context():  # its time to live passed; the pending update's 23 hours have not
        db.session.execute(update(Invitation).where(Invitation.id == invitation["id"]).values(
            expires_at=utcnow() - timedelta(minutes=1)))
        db.session.commit()
    again = team.client.post(f"{team.base}/invitations", json={"email": "cy@example.com"}, headers=team.ada)
    assert again.status_code == 409 and again.json["error"]["code"] == "already_invited", again.json
    listed = team.client.get(f"{team.base}/invitations", headers=team.ada).json["data"]
    assert [row["id"] for row in listed] == [invitation["id"]], listed
    pay_on_stripes_page(invoice)
    team.flow.deliver()
    assert team.members() == 2 and charged(team, subscription_id) - before == SEAT


def test_cancelling_now_while_a_seat_is_held_voids_its_invoice_before_the_ends_webhook(team):
    """The owner cancels now while a seat is held: the hold ends with Stripe's answer, and its invoice is voided
    before the cancel, as in dunning, so paying it on Stripe's page before the end's webhook comes charges
    nothing (cancelling alone leaves it open: https://docs.stripe.com/api/subscriptions/cancel)."""
    subscription_id, invitation, invoice = declined_seat(team, "cy")
    before = charged(team, subscription_id)
    answer = team.client.post(f"{team.base}/subscription/cancel", json={"at_period_end": False}, headers=team.ada)
    assert answer.status_code == 200 and answer.json["subscription"]["status"] == "canceled", answer.json
    assert _holds(team) == ["expired"]
    pay_on_stripes_page(invoice, refused=True)
    assert charged(team, subscription_id) == before
    team.flow.deliver()
    assert team.accept("cy", invitation).status_code == 200 and team.members() == 2


@pytest.mark.parametrize("final_invoice", [False, True], ids=["cancelled", "cancelled with a final invoice"])
@pytest.mark.parametrize("told", ["webhook", "sync", "sync alone"])
def test_a_hold_ends_with_the_subscription_stripe_cancelled_and_its_invoice_cannot_be_paid(team, told, final_invoice):
    """The organisation's subscription is cancelled at Stripe (its Dashboard, say) while a seat is held: the hold
    ends when the end is written, by the webhook or, that late, by ``flask sync-user --all``; whichever ends it
    voids the held invoice, which cancelling left open, so paying it on Stripe's page charges nothing, even when
    the event of the end never comes ("sync alone"; a dry run of ``flask reconcile`` before it voids nothing), and
    when a final invoice took the held one's place as the subscription's ``latest_invoice`` (review finding: it was
    left open, and paid it charged 900). The invitation stays: without a subscription the invitee joins freely."""
    subscription_id, invitation, invoice = declined_seat(team, "cy")
    before = charged(team, subscription_id)
    team.flow.stripe.v1.subscriptions.cancel(
        subscription_id, params={"invoice_now": True, "prorate": True} if final_invoice else None)
    if final_invoice:
        assert team.flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice != invoice.id
    if told == "sync alone":
        dry = team.app.test_cli_runner().invoke(args=["reconcile", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        assert team.flow.stripe.v1.invoices.retrieve(invoice.id).status == "open" and _holds(team) == ["held"]
    if told != "webhook":
        synced = team.app.test_cli_runner().invoke(args=["sync-user", "--all"])
        assert synced.exit_code == 0, synced.output
        assert _holds(team) == ["expired"]
    if told != "sync alone":
        team.flow.deliver()
    assert _holds(team) == ["expired"]
    pay_on_stripes_page(invoice, refused=True)
    assert charged(team, subscription_id) == before
    assert team.accept("cy", invitation).status_code == 200
    assert team.members() == 2 and team.flow.stripe.v1.subscriptions.retrieve(subscription_id).status == "canceled"
