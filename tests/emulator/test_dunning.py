"""The emulator's dunning and trial notices through the real SDK: a card that attaches but
cannot be charged, Stripe-style retries of a failed renewal (past_due, then unpaid), recovery
on the hosted invoice page, trial_will_end three days before a trial ends, cards with an expiry."""
import datetime as dt

import pytest
import requests
import stripe

from tests.support.emulator import activate, events_of, failing_renewal, period_end

DAY = 86400


def test_a_card_that_attaches_but_cannot_be_charged_fails_the_renewal(stripe_client, emulator, customer, price):
    attached = stripe_client.v1.payment_methods.attach("pm_card_chargeCustomerFail", params={"customer": customer.id})
    assert attached.customer == customer.id and attached.card.last4 == "0341"
    sub_id = failing_renewal(stripe_client, emulator, customer, price)
    failed = events_of(stripe_client, sub_id, {"invoice.payment_failed"})
    assert len(failed) == 1
    invoice = failed[0].data.object
    assert invoice.billing_reason == "subscription_cycle" and invoice.attempt_count == 1
    assert invoice.next_payment_attempt == failed[0].created + 3 * DAY
    assert invoice.hosted_invoice_url == f"{emulator.url}/invoice/{invoice.id}"
    assert stripe_client.v1.subscriptions.retrieve(sub_id).status == "past_due"


def test_retries_follow_the_schedule_then_the_subscription_is_unpaid(stripe_client, emulator, customer, price):
    sub_id = failing_renewal(stripe_client, emulator, customer, price)
    for delay, attempt in ((3, 2), (5, 3)):
        emulator.advance(delay * DAY)
        invoice = events_of(stripe_client, sub_id, {"invoice.payment_failed"})[-1].data.object
        assert invoice.attempt_count == attempt
        assert stripe_client.v1.subscriptions.retrieve(sub_id).status == "past_due"
    # The emulator's clock is real time plus the offset: a minute's margin for the test's own time.
    emulator.advance(7 * DAY - 60)
    assert len(events_of(stripe_client, sub_id, {"invoice.payment_failed"})) == 3, "not before the retry is due"
    emulator.advance(60)
    last = events_of(stripe_client, sub_id, {"invoice.payment_failed"})[-1].data.object
    assert last.attempt_count == 4 and last.next_payment_attempt is None
    update = events_of(stripe_client, sub_id, {"customer.subscription.updated"})[-1]
    assert update.data.object.status == "unpaid" and update.data.previous_attributes.to_dict() == {"status": "past_due"}
    emulator.advance(5 * DAY)
    assert len(events_of(stripe_client, sub_id, {"invoice.payment_failed"})) == 4, "no retry after the last"


def test_paying_on_the_hosted_invoice_page_recovers(stripe_client, emulator, customer, price):
    sub_id = failing_renewal(stripe_client, emulator, customer, price)
    url = events_of(stripe_client, sub_id, {"invoice.payment_failed"})[-1].data.object.hosted_invoice_url
    assert "Pay" in requests.get(url, timeout=10).text
    declined = requests.post(f"{url}/pay", data={"payment_method": "pm_card_chargeDeclined"}, timeout=10)
    assert "declined" in declined.text and stripe_client.v1.subscriptions.retrieve(sub_id).status == "past_due"
    assert requests.post(f"{url}/pay", data={"payment_method": "pm_card_visa"}, timeout=10).status_code == 200
    sub = stripe_client.v1.subscriptions.retrieve(sub_id, params={"expand": ["latest_invoice"]})
    assert sub.status == "active" and sub.latest_invoice.status == "paid"
    assert sub.latest_invoice.next_payment_attempt is None
    update = events_of(stripe_client, sub_id, {"customer.subscription.updated"})[-1]
    assert update.data.previous_attributes["status"] == "past_due"
    emulator.advance(20 * DAY)
    assert len(events_of(stripe_client, sub_id, {"invoice.payment_failed"})) == 2, "a paid invoice is not retried"


def test_trial_will_end_three_days_before_the_trial_ends_once(stripe_client, emulator, customer, price):
    stripe_client.v1.customers.update(customer.id, params={
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 7})
    emulator.advance(4 * DAY - 60)
    assert events_of(stripe_client, sub.id, {"customer.subscription.trial_will_end"}) == []
    emulator.advance(60)
    (notice,) = events_of(stripe_client, sub.id, {"customer.subscription.trial_will_end"})
    assert notice.data.object.status == "trialing" and notice.data.object.trial_end == sub.trial_end
    emulator.advance(3 * DAY + 1)
    assert len(events_of(stripe_client, sub.id, {"customer.subscription.trial_will_end"})) == 1
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "active"


def test_a_card_with_an_expiry_is_declined_once_expired(stripe_client, emulator, customer, price):
    now = dt.datetime.fromtimestamp(emulator.clock(), dt.UTC)
    card = stripe_client.v1.payment_methods.create(params={"type": "card", "card": {
        "number": "4242424242424242", "exp_month": now.month, "exp_year": now.year, "cvc": "123"}})
    assert (card.card.exp_month, card.card.exp_year, card.card.last4) == (now.month, now.year, "4242")
    sub = activate(stripe_client, customer, price, pm=card.id)
    assert sub.status == "active", "valid through the end of its month"
    emulator.advance(period_end(sub) - emulator.clock() + 1)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "past_due"
    failed = events_of(stripe_client, sub.id, {"invoice.payment_failed"})
    assert len(failed) == 1


def test_a_card_number_that_is_not_a_test_number_is_refused(stripe_client):
    with pytest.raises(stripe.CardError) as refused:
        stripe_client.v1.payment_methods.create(params={"type": "card", "card": {
            "number": "4111111111111112", "exp_month": 1, "exp_year": 2030}})
    assert refused.value.code == "incorrect_number"
