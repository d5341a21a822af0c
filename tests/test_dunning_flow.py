"""Dunning, trial and card-expiry notifications end to end: the emulator produces the events
from its own state (a card that cannot be charged, its retry schedule, a trial ending, a card
near its expiry), the real stripe SDK drives it, and the service receives signed webhooks."""
import datetime as dt

import pytest
import requests
import stripe
from sqlalchemy import update

from app.extensions import db
from app.models import User
from app.notifications.kinds import NOTIFICATION_KINDS
from tests.support.billing import DAY


def notes(flow):
    page = flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]
    stored = [(n["kind"], n["data"]) for n in page]
    assert {kind for kind, _ in stored} <= set(NOTIFICATION_KINDS), "every kind stored is documented"
    # Receipts (payment_succeeded) are tests/test_selling.py's; these tests follow the lifecycle.
    return [(kind, data) for kind, data in stored if kind != "payment_succeeded"]


def subscribed(flow, card="pm_card_visa"):
    started = flow.intent()
    flow.pay(started["client_secret"], card=card)
    flow.deliver()
    return started["subscription"]["id"]


def renew(flow, subscription_id):
    """Advance the emulator's clock to just past the subscription's period end and deliver."""
    end = flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end
    flow.emulator.advance(end - flow.emulator.clock() + 1)
    flow.deliver()


def test_a_failed_renewal_goes_past_due_then_unpaid_and_recovers_on_the_hosted_invoice(flow):
    subscription_id = subscribed(flow)
    flow.stripe.v1.subscriptions.update(subscription_id,
                                        params={"default_payment_method": "pm_card_chargeCustomerFail"})
    renew(flow, subscription_id)
    me = flow.me()
    assert me["plan"] == "free" and me["subscription"]["status"] == "past_due"
    (failed, past_due) = notes(flow)[:2][::-1]
    assert past_due == ("past_due", {"subscription": subscription_id, "from_status": "active", "status": "past_due"})
    kind, data = failed
    assert kind == "payment_failed" and data["subscription"] == subscription_id and data["attempt_count"] == 1
    # Three days after the attempt; the emulator's clock runs in real time meanwhile.
    assert 0 <= flow.emulator.clock() + 3 * DAY - data["next_payment_attempt"] < 60
    assert data["hosted_invoice_url"].startswith(f"{flow.emulator.url}/invoice/in_")

    for days in (3, 5, 7):  # the emulator's retry schedule, each attempt failing again
        flow.emulator.advance(days * DAY)
        flow.deliver()
    kinds = [kind for kind, _ in notes(flow)]
    assert kinds.count("payment_failed") == 4 and kinds[0] == "past_due"
    assert notes(flow)[0][1]["status"] == "unpaid" and notes(flow)[1][1]["next_payment_attempt"] is None

    pay = requests.post(f"{data['hosted_invoice_url']}/pay", data={"payment_method": "pm_card_visa"}, timeout=10)
    assert pay.status_code == 200
    flow.deliver()
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    assert notes(flow)[0] == ("payment_recovered", {"subscription": subscription_id, "from_status": "unpaid",
                                                    "status": "active"})
    assert [kind for kind, _ in notes(flow)].count("subscribed") == 1, "a recovery is not a new subscription"


def test_a_first_payment_declined_at_the_payment_form_notifies_nobody(flow):
    """Issue 21 item 5: the subscription is still incomplete, and the form already told the person."""
    started = flow.intent()
    with pytest.raises(stripe.CardError):
        flow.pay(started["client_secret"], card="pm_card_chargeDeclined")
    assert "invoice.payment_failed" in flow.deliver()
    assert notes(flow) == [] and flow.me()["subscription"]["status"] == "incomplete"
    flow.pay(started["client_secret"], card="pm_card_visa")
    flow.deliver()
    assert [kind for kind, _ in notes(flow)] == ["subscribed"]


def test_a_recovery_on_retry_notifies_payment_recovered(flow):
    subscription_id = subscribed(flow)
    flow.emulator.fail_next_renewal(subscription_id)
    renew(flow, subscription_id)
    flow.emulator.advance(3 * DAY)  # the first retry charges the card on file, which works
    flow.deliver()
    assert [kind for kind, _ in notes(flow)] == ["payment_recovered", "past_due", "payment_failed", "subscribed"]
    assert flow.me()["plan"] == "basic"


def test_a_trial_that_ends_is_announced_three_days_ahead(flow):
    customer = flow.stripe.v1.customers.create(params={"email": "ada@example.com"})
    with flow.app.app_context():
        db.session.execute(update(User).values(provider_id=customer.id))
        db.session.commit()
    flow.stripe.v1.customers.update(customer.id,
                                    params={"invoice_settings": {"default_payment_method": "pm_card_visa"}})
    # With its own card: a trial entitles once its card is saved (CONTRACT "Changes to the third round").
    trial = flow.stripe.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": flow.prices["basic"]}], "trial_period_days": 14,
        "default_payment_method": "pm_card_visa"})
    flow.deliver()
    started = ("trial_started", {"subscription": trial.id, "trial_end": trial.trial_end})
    assert flow.me()["plan"] == "basic" and notes(flow) == [started]
    flow.emulator.advance(11 * DAY)
    flow.deliver()
    assert notes(flow) == [("trial_will_end", {"subscription": trial.id, "trial_end": trial.trial_end}), started]
    flow.emulator.advance(3 * DAY)
    flow.deliver()
    assert [kind for kind, _ in notes(flow)] == ["trial_will_end", "trial_started"], \
        "trialing -> active notifies nobody"


def card_expiring_at_end_of(months_ahead, flow):
    now = dt.datetime.fromtimestamp(flow.emulator.clock(), dt.UTC)
    year, month = divmod(now.year * 12 + now.month - 1 + months_ahead, 12)
    card = flow.stripe.v1.payment_methods.create(params={"type": "card", "card": {
        "number": "4242424242424242", "exp_month": month + 1, "exp_year": year, "cvc": "123"}})
    return card.id, month + 1, year


def test_a_renewal_warns_of_a_card_that_expires_within_30_days(flow):
    card, exp_month, exp_year = card_expiring_at_end_of(1, flow)
    subscription_id = subscribed(flow, card=card)
    assert [kind for kind, _ in notes(flow)] == ["subscribed"], "the first payment is not a renewal"
    renew(flow, subscription_id)
    kind, data = notes(flow)[0]
    assert kind == "card_expiring" and flow.me()["plan"] == "basic"
    assert {k: data[k] for k in ("subscription", "brand", "last4", "exp_month", "exp_year")} == {
        "subscription": subscription_id, "brand": "visa", "last4": "4242", "exp_month": exp_month, "exp_year": exp_year}
    assert data["invoice"].startswith("in_")
    assert [kind for kind, _ in notes(flow)].count("card_expiring") == 1, "invoice.payment_succeeded is its twin"


def test_a_renewal_with_a_card_far_from_expiry_warns_nobody(flow):
    subscription_id = subscribed(flow)
    renew(flow, subscription_id)
    assert [kind for kind, _ in notes(flow)] == ["subscribed"]
