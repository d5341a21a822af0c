"""Free trials (issue 21): a user's first subscription is a PROVIDER_TRIAL_DAYS trial whose card the
intent's SetupIntent collects; without a card it pauses at the trial's end, and a card resumes it.

Through the real stripe SDK to the emulator and back by real HTTP webhooks, as tests/test_billing_flow.py.
"""
import re

import pytest
import stripe
from sqlalchemy import delete

from app.billing.stripe_provider import StripeProvider
from app.extensions import db
from app.models import Subscription
from tests.support.accounts import bearer, login, register
from tests.support.billing import DAY, calls, get, post, save_card, settle

TRIAL_DAYS = 14


@pytest.fixture
def live_config():
    return {"PROVIDER_TRIAL_DAYS": TRIAL_DAYS}


def start_trial(flow):
    started = flow.intent()
    subscription = started["subscription"]
    assert subscription["status"] == "trialing", started
    assert re.fullmatch(r"seti_\w+_secret_\w+", started["client_secret"]), "the card is collected up front"
    return started


def to_trial_end(flow, subscription_id):
    trial_end = flow.stripe.v1.subscriptions.retrieve(subscription_id).trial_end
    flow.emulator.advance(trial_end - flow.emulator.clock() + 1)
    settle(flow)


def test_a_first_subscription_is_a_trial_that_charges_the_card_it_collected(flow):
    started = start_trial(flow)
    subscription_id = started["subscription"]["id"]
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live.trial_end - live.trial_start == TRIAL_DAYS * DAY
    assert live.trial_settings.end_behavior.missing_payment_method == "pause"
    assert live.payment_settings.save_default_payment_method == "on_subscription"
    assert started["subscription"]["trial_end"] is not None
    settle(flow)
    assert flow.me()["plan"] == "free", "a trial grants its plan only once its card is saved"
    again = flow.intent(expect=409)["error"]
    assert again["code"] == "already_subscribed" and again["details"] == {"status": "trialing"}, "one trial at a time"

    card = flow.stripe.v1.setup_intents.confirm(started["client_secret"].split("_secret_")[0],
                                                params={"payment_method": "pm_card_visa"}).payment_method
    settle(flow)
    assert flow.me()["plan"] == "basic", "the card is saved: the trial entitles"
    assert flow.me()["card"] == {"brand": "visa", "last4": "4242"}
    assert flow.notifications() == ["trial_started"]
    assert get(flow, "/subscription/invoices/upcoming")["amount_due"] == 900, "the first charge, after the trial"

    to_trial_end(flow, subscription_id)
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    invoices = get(flow, "/subscription/invoices")["data"]
    assert [(invoice["amount_due"], invoice["status"]) for invoice in invoices] == [(900, "paid"), (0, "paid")]
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id, params={"expand": ["latest_invoice.payments"]})
    intent = flow.stripe.v1.payment_intents.retrieve(live.latest_invoice.payments.data[0].payment.payment_intent)
    assert intent.payment_method == card
    assert flow.notifications() == ["trial_will_end", "trial_started"], "trialing -> active notifies nobody"


def test_a_trial_without_a_card_pauses_and_the_plan_falls_to_free_until_a_card_resumes_it(flow):
    subscription_id = start_trial(flow)["subscription"]["id"]
    settle(flow)
    to_trial_end(flow, subscription_id)
    me = flow.me()
    assert me["plan"] == "free" and me["subscription"]["status"] == "paused"
    assert flow.notifications() == ["trial_will_end"], "no card: the trial never started for the customer"
    assert get(flow, "/subscription/invoices/upcoming", expect=404)["error"]["code"] == "not_found"
    again = flow.intent(expect=409)["error"]
    assert again["code"] == "already_subscribed" and again["details"] == {"status": "paused"}

    saved = save_card(flow, "pm_card_visa")
    types = settle(flow)
    assert "customer.subscription.resumed" in types
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id, params={"expand": ["latest_invoice"]})
    assert live.status == "active" and live.default_payment_method == saved.payment_method
    assert live.latest_invoice.amount_paid == 900
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    assert flow.notifications() == ["subscribed", "trial_will_end"]


def test_a_paused_trial_can_be_cancelled(flow):
    subscription_id = start_trial(flow)["subscription"]["id"]
    settle(flow)
    to_trial_end(flow, subscription_id)
    response = flow.client.post("/subscription/cancel", json={"at_period_end": True}, headers=flow.headers)
    assert response.status_code == 200 and response.json["subscription"]["status"] == "canceled"
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).status == "canceled"


def test_a_second_subscription_gets_no_trial(flow):
    start_trial(flow)
    post(flow, "/subscription/cancel", {"at_period_end": False})
    listed = calls(flow, "GET /v1/subscriptions")
    second = flow.intent()
    assert second["subscription"]["status"] == "incomplete" and second["subscription"]["trial_end"] is None
    assert calls(flow, "GET /v1/subscriptions") == listed, "the stored subscription answers without asking Stripe"
    assert second["client_secret"].startswith("pi_"), "the first payment is due now"
    flow.pay(second["client_secret"])
    settle(flow)
    assert flow.me()["plan"] == "basic"
    assert "trial_started" not in flow.notifications(), "the first trial never had its card; the second is none"


def test_a_subscription_stripe_has_and_the_database_lost_rules_the_trial_out_too(flow):
    start_trial(flow)
    post(flow, "/subscription/cancel", {"at_period_end": False})
    with flow.app.app_context():
        db.session.execute(delete(Subscription))
        db.session.commit()
    second = flow.intent()
    assert second["subscription"]["status"] == "incomplete" and second["client_secret"].startswith("pi_")



def test_the_provider_resumes_a_paused_trial_with_the_anchor_stripe_accepts(emulator, stripe_client):
    """Issue 26: at 2026-10-28.endive ``billing_cycle_anchor`` is ``{"type": "now"}``; the strict emulator,
    like Stripe, refuses the old ``"now"``, so the provider's own call resumes the trial once a card is there."""
    emulator.reset()
    provider = StripeProvider(api_key="sk_test_emulator", api_base=emulator.url, max_network_retries=0)
    price = stripe_client.v1.prices.create(params={
        "unit_amount": 900, "currency": "usd", "recurring": {"interval": "month"}, "product_data": {"name": "Basic"}})
    customer = stripe_client.v1.customers.create(params={"email": "paused@example.com"})
    subscription = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 1,
        "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "trial_settings": {"end_behavior": {"missing_payment_method": "pause"}}})
    emulator.advance(2 * DAY)
    assert stripe_client.v1.subscriptions.retrieve(subscription.id).status == "paused"
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.subscriptions.resume(subscription.id, params={"billing_cycle_anchor": "now"})
    assert refused.value.param == "billing_cycle_anchor"

    stripe_client.v1.setup_intents.confirm(subscription.pending_setup_intent, params={"payment_method": "pm_card_visa"})
    resumed = provider.resume_subscription(subscription.id, f"resume-{subscription.id}")
    assert resumed["status"] == "active"
    assert stripe_client.v1.subscriptions.retrieve(subscription.id).status == "active"


def trial_of(flow, email, card):
    """A second account on the same service starts a trial and saves ``card``; return its subscription id."""
    register(flow.client, email=email)
    flow.headers = bearer(login(flow.client, email=email))
    started = start_trial(flow)
    flow.stripe.v1.setup_intents.confirm(started["client_secret"].split("_secret_")[0],
                                         params={"payment_method": card})
    settle(flow)
    return started["subscription"]["id"]


def test_a_card_earns_one_trial_whatever_the_account(flow):
    """Issue 25 item 6: five accounts with one card got five trials. Stripe gives a card one
    fingerprint within the account; a second trial saved with it ends at once and is charged."""
    first = trial_of(flow, "one@example.com", "pm_card_visa")
    assert flow.stripe.v1.subscriptions.retrieve(first).status == "trialing"
    second = trial_of(flow, "two@example.com", "pm_card_visa")
    live = flow.stripe.v1.subscriptions.retrieve(second, params={"expand": ["latest_invoice"]})
    assert live.status == "active" and live.trial_end <= flow.emulator.clock(), "the trial ended at once"
    assert live.latest_invoice.amount_paid == 900, "the first period is charged now"
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    assert flow.notifications() == ["subscribed"], "never told a trial began: it is paid from now (issue 31)"
    other = trial_of(flow, "three@example.com", "pm_card_mastercard")
    assert flow.stripe.v1.subscriptions.retrieve(other).status == "trialing", "another card has its own trial"
    assert flow.notifications() == ["trial_started"]
    assert flow.stripe.v1.subscriptions.retrieve(first).status == "trialing", "the first trial is untouched"
