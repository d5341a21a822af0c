"""Credits never exceed what was paid (CONTRACT "Changes to the fifth round"), through HTTP, the CLI and the emulator.

The finding: seats bought under a 100%-off ``once`` code and then reduced were credited at the full price (a user
paid 0 and got 42,630 in credit, an organisation 18,946), because every subscription was created in Stripe's
``classic`` billing mode, which credits from the current price. Subscriptions are now created ``flexible``, whose
credits come from what was debited (https://docs.stripe.com/billing/subscriptions/billing-mode/compare); a
``classic`` one is migrated before its next change and by ``flask migrate-billing-mode``.
"""
from sqlalchemy import select

from app.extensions import db
from app.models import Subscription
from tests.support.billing import post
from tests.support.organizations import Team
from tests.support.selling import checkout, complete, promotion

DAY = 86400


def free_once(flow, code="FREE"):
    return promotion(flow, code, percent_off=100, duration="once")


def credited(flow, customer):
    """What the customer's prorations give back net, in cents (0 when they cost): its invoices' proration lines
    and those waiting for the next invoice, credits less charges."""
    invoices = flow.stripe.v1.invoices.list(params={"customer": customer, "limit": 100}).data
    lines = [line for invoice in invoices for line in invoice.lines.data]
    for subscription in flow.stripe.v1.subscriptions.list(params={"customer": customer}).data:
        lines += flow.stripe.v1.invoices.create_preview(params={"subscription": subscription.id}).lines.data
    return max(0, -sum(line.amount for line in lines if line.parent.subscription_item_details.proration))


def paid(flow, customer):
    invoices = flow.stripe.v1.invoices.list(params={"customer": customer, "limit": 100}).data
    return sum(invoice.amount_paid for invoice in invoices)


def live_row(flow, provider_id):
    with flow.app.app_context():
        return db.session.scalars(select(Subscription).where(Subscription.provider_id == provider_id)).one()


def users_free_seats(flow, seats):
    """The flow's user buys ``seats`` seats through Checkout under a 100%-off once code; the subscription's id."""
    free_once(flow)
    session = checkout(flow, quantity=seats, promotion_code="FREE")
    complete(flow, session["id"])
    flow.deliver()
    return flow.client.get("/subscription", headers=flow.headers).json["subscription"]["id"]


def test_a_users_seats_bought_free_and_reduced_are_credited_nothing(flow):
    subscription_id = users_free_seats(flow, 10)
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).billing_mode.type == "flexible"
    flow.emulator.advance(15 * DAY)
    post(flow, "/subscription/quantity", {"quantity": 1})
    flow.deliver()
    assert (paid(flow, customer), credited(flow, customer)) == (0, 0)
    assert flow.stripe.v1.customers.retrieve(customer).balance == 0


def test_an_organizations_seats_bought_free_and_reduced_are_credited_nothing(flow):
    team = Team(flow)
    for name in ("bob", "cy", "dee"):
        team.join(name)
    free_once(flow)
    started = team.client.post(f"{team.base}/subscription/intent",
                               json={"price": flow.prices["basic"], "promotion_code": "FREE"}, headers=team.ada)
    assert started.status_code == 201, started.json
    flow.deliver()
    subscription_id = started.json["subscription"]["id"]
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    assert team.stripe_quantity(subscription_id) == 4
    flow.emulator.advance(15 * DAY)
    for name in ("bob", "cy"):
        member = team.client.get("/auth/me", headers=team.headers[name]).json["id"]
        assert team.client.delete(f"{team.base}/members/{member}", headers=team.ada).status_code == 204
    flow.deliver()
    assert team.stripe_quantity(subscription_id) == 2
    assert (paid(flow, customer), credited(flow, customer)) == (0, 0)


def classic_free_seats(flow, seats):
    """A ``classic`` subscription of the flow's user, as one created before this round: ``seats`` seats under a
    100%-off once code, written by its webhooks. Returns ``(subscription id, customer id)``."""
    started = flow.intent()
    customer = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"]).customer
    flow.stripe.v1.subscriptions.cancel(started["subscription"]["id"])
    flow.stripe.v1.payment_methods.attach("pm_card_visa", params={"customer": customer})
    code = free_once(flow)
    classic = flow.stripe.v1.subscriptions.create(params={
        "billing_mode": {"type": "classic"}, "customer": customer, "default_payment_method": "pm_card_visa",
        "items": [{"price": flow.prices["basic"], "quantity": seats}], "discounts": [{"promotion_code": code.id}]})
    flow.deliver()
    assert live_row(flow, classic.id).billing_mode == "classic"
    return classic.id, customer


def test_a_classic_subscription_is_migrated_before_its_next_change(flow):
    subscription_id, customer = classic_free_seats(flow, 10)
    flow.emulator.advance(15 * DAY)
    post(flow, "/subscription/quantity", {"quantity": 1})
    flow.deliver()
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).billing_mode.type == "flexible"
    assert live_row(flow, subscription_id).billing_mode == "flexible"
    assert (paid(flow, customer), credited(flow, customer)) == (0, 0)


def test_migrate_billing_mode_moves_every_live_classic_subscription(flow):
    subscription_id, customer = classic_free_seats(flow, 10)
    runner = flow.app.test_cli_runner()
    dry = runner.invoke(args=["migrate-billing-mode", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == [f"{subscription_id}: classic (dry run: not migrated)",
                                       "classic 1, migrated 0, failed 0 (dry run: nothing migrated)"]
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).billing_mode.type == "classic"
    done = runner.invoke(args=["migrate-billing-mode"])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines() == [f"{subscription_id}: migrated to flexible", "classic 1, migrated 1, failed 0"]
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).billing_mode.type == "flexible"
    assert live_row(flow, subscription_id).billing_mode == "flexible"
    assert runner.invoke(args=["migrate-billing-mode"]).output.splitlines() == ["classic 0, migrated 0, failed 0"]
    flow.emulator.advance(15 * DAY)
    post(flow, "/subscription/quantity", {"quantity": 1})
    assert credited(flow, customer) == 0


def test_a_swap_preview_of_a_classic_subscription_shows_the_flexible_credit(flow):
    subscription_id, customer = classic_free_seats(flow, 10)
    flow.emulator.advance(15 * DAY)
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}", headers=flow.headers)
    assert preview.status_code == 200, preview.json
    assert all(line["amount"] >= 0 for line in preview.json["lines"]), preview.json
