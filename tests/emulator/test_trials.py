"""Free trials through the real SDK: the pending SetupIntent, the end with and without a card, resume."""

from __future__ import annotations

import pytest
import stripe

from tests.support.emulator import DAY, events_of


def trial(client, customer, price, end_behavior="pause", **extra):
    return client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 14,
        "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "trial_settings": {"end_behavior": {"missing_payment_method": end_behavior}},
        "expand": ["latest_invoice.confirmation_secret", "pending_setup_intent"], **extra})


def end_trial(emulator, sub):
    emulator.advance(sub.trial_end - emulator.clock() + 1)


def test_a_trial_collects_the_card_with_its_pending_setup_intent_and_charges_it_at_the_end(
        stripe_client, emulator, customer, price):
    sub = trial(stripe_client, customer, price)
    assert sub.status == "trialing" and sub.trial_end - sub.trial_start == 14 * DAY
    assert sub.latest_invoice.amount_due == 0 and sub.latest_invoice.status == "paid"
    assert sub.latest_invoice.confirmation_secret is None
    seti = sub.pending_setup_intent
    assert seti.status == "requires_payment_method" and seti.usage == "off_session" and seti.customer == customer.id
    assert sub.trial_settings.end_behavior.missing_payment_method == "pause"

    confirmed = stripe_client.v1.setup_intents.confirm(seti.id, params={"payment_method": "pm_card_visa"})
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live.default_payment_method == confirmed.payment_method and live.pending_setup_intent is None
    saved = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    assert set(saved.data.previous_attributes.to_dict()) == {"default_payment_method", "pending_setup_intent"}

    end_trial(emulator, sub)
    live = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice.payments"]})
    assert live.status == "active" and live.latest_invoice.status == "paid" and live.latest_invoice.amount_paid == 1500
    intent = stripe_client.v1.payment_intents.retrieve(live.latest_invoice.payments.data[0].payment.payment_intent)
    assert intent.payment_method == confirmed.payment_method


def test_a_trial_without_a_card_pauses_and_resumes_once_a_card_is_there(stripe_client, emulator, customer, price):
    sub = trial(stripe_client, customer, price)
    end_trial(emulator, sub)
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live.status == "paused" and live.latest_invoice == sub.latest_invoice.id, "no invoice while paused"
    assert [e.type for e in events_of(stripe_client, sub.id)][-2:] == ["customer.subscription.updated",
                                                                       "customer.subscription.paused"]
    emulator.advance(40 * DAY)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "paused", "time does not move a paused one"

    card = stripe_client.v1.setup_intents.confirm(sub.pending_setup_intent.id,
                                                  params={"payment_method": "pm_card_visa"}).payment_method
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "paused", "a card alone does not resume it"
    resumed = stripe_client.v1.subscriptions.resume(sub.id, params={"billing_cycle_anchor": {"type": "now"},
                                                                    "expand": ["latest_invoice"]})
    assert resumed.status == "active" and resumed.latest_invoice.amount_paid == 1500
    item = resumed["items"].data[0]
    assert abs(item.current_period_start - emulator.clock()) < 5 and item.current_period_end > item.current_period_start
    assert [e.type for e in events_of(stripe_client, sub.id)][-2:] == ["customer.subscription.updated",
                                                                       "customer.subscription.resumed"]
    assert resumed.default_payment_method == card
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.subscriptions.resume(sub.id)


def test_resuming_with_a_card_that_is_declined_leaves_it_past_due(stripe_client, emulator, customer, price):
    sub = trial(stripe_client, customer, price)
    end_trial(emulator, sub)
    stripe_client.v1.subscriptions.update(sub.id, params={"default_payment_method": "pm_card_chargeCustomerFail"})
    assert stripe_client.v1.subscriptions.resume(sub.id).status == "past_due"


def test_a_trial_set_to_cancel_without_a_card_ends_at_the_trial_end(stripe_client, emulator, customer, price):
    sub = trial(stripe_client, customer, price, end_behavior="cancel")
    end_trial(emulator, sub)
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live.status == "canceled" and live.ended_at == sub.trial_end


def test_a_trial_with_the_default_end_behavior_invoices_and_goes_past_due(stripe_client, emulator, customer, price):
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 3})
    assert sub.pending_setup_intent is None, "only default_incomplete collects the card up front"
    emulator.advance(3 * DAY + 1)
    live = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert live.status == "past_due" and live.latest_invoice.status == "open"


def test_an_unknown_end_behavior_is_refused(stripe_client, customer, price):
    with pytest.raises(stripe.InvalidRequestError) as refused:
        trial(stripe_client, customer, price, end_behavior="sometimes")
    assert refused.value.param == "trial_settings[end_behavior][missing_payment_method]"
