"""Prorations, pending updates, invoice previews and cancelling with a final invoice, through the real SDK."""

from __future__ import annotations

import pytest
import stripe

from tests.support.emulator import DAY, activate, events_of


def item_of(sub):
    return sub["items"].data[0]


def with_card(client, sub, card):
    method = client.v1.payment_methods.attach(card, params={"customer": sub.customer})
    return client.v1.subscriptions.update(sub.id, params={"default_payment_method": method.id})


def swap(client, sub, price, **params):
    return client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item_of(sub).id, "price": price.id}], "expand": ["latest_invoice"], **params})


def test_always_invoice_charges_the_prorated_difference_at_once(stripe_client, emulator, customer, price, price2):
    sub = activate(stripe_client, customer, price)
    emulator.advance(15 * DAY)
    when = stripe_client.v1.subscriptions.retrieve(sub.id)
    start, end = item_of(when).current_period_start, item_of(when).current_period_end
    proration_date = start + (end - start) // 2
    preview = stripe_client.v1.invoices.create_preview(params={
        "subscription": sub.id, "subscription_details": {
            "items": [{"id": item_of(sub).id, "price": price2.id}], "proration_behavior": "always_invoice",
            "proration_date": proration_date}})
    amounts = [line.amount for line in preview.lines.data]
    share = (end - proration_date) / (end - start)
    assert amounts == [-round(1500 * share), round(4000 * share)]
    assert all(line.parent.subscription_item_details.proration for line in preview.lines.data)

    updated = swap(stripe_client, sub, price2, proration_behavior="always_invoice", proration_date=proration_date,
                   payment_behavior="pending_if_incomplete")
    assert item_of(updated).price.id == price2.id and updated.pending_update is None
    assert updated.latest_invoice.billing_reason == "subscription_update"
    assert updated.latest_invoice.status == "paid" and updated.latest_invoice.amount_paid == preview.amount_due


@pytest.mark.parametrize("card, outcome", [("pm_card_chargeCustomerFail", "requires_payment_method"),
                                           ("pm_card_authenticationRequired", "requires_action")])
def test_a_pending_update_holds_an_unpaid_change_until_paid(stripe_client, webhook, customer, price, price2, card,
                                                            outcome):
    sub = with_card(stripe_client, activate(stripe_client, customer, price), card)
    updated = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item_of(sub).id, "price": price2.id}], "proration_behavior": "always_invoice",
        "payment_behavior": "pending_if_incomplete", "expand": ["latest_invoice.confirmation_secret"]})
    assert item_of(updated).price.id == price.id, "the old price stays"
    assert updated.pending_update.subscription_items[0].price.id == price2.id
    secret = updated.latest_invoice.confirmation_secret.client_secret
    assert stripe_client.v1.payment_intents.retrieve(secret.split("_secret_")[0]).status == outcome

    stripe_client.v1.payment_intents.confirm(secret.split("_secret_")[0], params={"payment_method": "pm_card_visa"})
    paid = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert item_of(paid).price.id == price2.id and paid.pending_update is None
    types = [event.type for event in events_of(stripe_client, sub.id)]
    assert types[-2:] == ["customer.subscription.updated", "customer.subscription.pending_update_applied"]


def test_a_pending_update_expires_after_23_hours(stripe_client, emulator, customer, price, price2):
    sub = with_card(stripe_client, activate(stripe_client, customer, price), "pm_card_chargeDeclined")
    updated = swap(stripe_client, sub, price2, proration_behavior="always_invoice",
                   payment_behavior="pending_if_incomplete")
    emulator.advance(23 * 3600 + 1)
    expired = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert expired.pending_update is None and item_of(expired).price.id == price.id
    assert stripe_client.v1.invoices.retrieve(updated.latest_invoice.id).status == "void"
    assert events_of(stripe_client, sub.id)[-1].type == "customer.subscription.pending_update_expired"


def test_a_pending_update_made_near_the_renewal_expires_at_the_periods_end(stripe_client, emulator, customer, price,
                                                                          price2):
    """"The earlier of the end of the trial, the end of the current billing period, or 23 hours"
    (https://docs.stripe.com/billing/subscriptions/pending-updates-reference): it never outlives the renewal."""
    sub = with_card(stripe_client, activate(stripe_client, customer, price), "pm_card_chargeDeclined")
    end = item_of(sub).current_period_end
    # 22 hours before the end: the difference (76 cents) is above Stripe's 50-cent minimum charge, so it is charged
    # (an hour before, 3 cents would go to the customer's balance, https://docs.stripe.com/billing/customer/balance).
    emulator.advance(end - emulator.clock() - 22 * 3600)
    updated = swap(stripe_client, sub, price2, proration_behavior="always_invoice",
                   payment_behavior="pending_if_incomplete")
    assert updated.pending_update.expires_at == end
    emulator.advance(22 * 3600)
    renewed = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert renewed.pending_update is None and item_of(renewed).price.id == price.id
    assert stripe_client.v1.invoices.retrieve(updated.latest_invoice.id).status == "void"


def test_a_pending_update_after_a_trial_has_its_hours(stripe_client, emulator, customer, price, price2):
    """Review finding: the trial's end, kept once the trial is over, made a later pending update expire at once."""
    method = stripe_client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    sub = stripe_client.v1.subscriptions.create(params={
        "billing_mode": {"type": "classic"}, "customer": customer.id, "items": [{"price": price.id}],
        "trial_period_days": 1, "default_payment_method": method.id})
    emulator.advance(DAY + 60)
    sub = with_card(stripe_client, stripe_client.v1.subscriptions.retrieve(sub.id), "pm_card_chargeDeclined")
    assert sub.status == "active" and sub.trial_end < emulator.clock()
    # The emulator's clock runs on in real time: the update happened between these two readings.
    before = emulator.clock()
    updated = swap(stripe_client, sub, price2, proration_behavior="always_invoice",
                   payment_behavior="pending_if_incomplete")
    assert before + 23 * 3600 <= updated.pending_update.expires_at <= emulator.clock() + 23 * 3600


def test_error_if_incomplete_refuses_and_allow_incomplete_applies_past_due(stripe_client, customer, price, price2):
    sub = with_card(stripe_client, activate(stripe_client, customer, price), "pm_card_chargeDeclined")
    with pytest.raises(stripe.CardError):
        swap(stripe_client, sub, price2, proration_behavior="always_invoice", payment_behavior="error_if_incomplete")
    assert item_of(stripe_client.v1.subscriptions.retrieve(sub.id)).price.id == price.id
    applied = swap(stripe_client, sub, price2, proration_behavior="always_invoice")
    assert item_of(applied).price.id == price2.id and applied.status == "past_due"


def test_create_prorations_wait_for_the_renewal_invoice(stripe_client, emulator, customer, price, price2):
    sub = activate(stripe_client, customer, price)
    swap(stripe_client, sub, price2)
    upcoming = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id})
    assert [line.parent.subscription_item_details.proration for line in upcoming.lines.data] == [True, True, False]
    emulator.advance(32 * DAY)
    renewal = stripe_client.v1.invoices.retrieve(stripe_client.v1.subscriptions.retrieve(sub.id).latest_invoice)
    assert renewal.amount_due == upcoming.amount_due and len(renewal.lines.data) == 3


def test_no_upcoming_invoice_once_a_cancellation_is_scheduled(stripe_client, customer, price):
    sub = activate(stripe_client, customer, price)
    stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True})
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.invoices.create_preview(params={"subscription": sub.id})
    assert refused.value.code == "invoice_upcoming_none"


def test_a_proration_date_outside_the_period_is_refused(stripe_client, customer, price, price2):
    sub = activate(stripe_client, customer, price)
    with pytest.raises(stripe.InvalidRequestError) as refused:
        swap(stripe_client, sub, price2, proration_date=item_of(sub).current_period_end + 1)
    assert refused.value.param == "proration_date"


def test_cancel_now_with_prorate_and_invoice_now_credits_the_unused_time(stripe_client, emulator, customer, price):
    sub = activate(stripe_client, customer, price)
    emulator.advance(10 * DAY)
    cancelled = stripe_client.v1.subscriptions.cancel(sub.id, params={"prorate": True, "invoice_now": True})
    assert cancelled.status == "canceled"
    final = stripe_client.v1.invoices.retrieve(cancelled.latest_invoice)
    assert final.amount_due == 0 and final.lines.data[0].amount < 0
    assert stripe_client.v1.customers.retrieve(customer.id).balance == final.lines.data[0].amount


def test_a_preview_refuses_the_items_an_update_would_refuse(stripe_client, customer, price, price2):
    sub = activate(stripe_client, customer, price)
    for items, param in (([{"id": item_of(sub).id}, {"price": "price_nope"}], "subscription_details[items][1][price]"),
                         ([{"id": item_of(sub).id}, {"price": price.id}], "items")):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            stripe_client.v1.invoices.create_preview(params={
                "subscription": sub.id, "subscription_details": {"items": items}})
        assert refused.value.param == param
    assert stripe_client.v1.invoices.create_preview(params={"subscription": sub.id, "subscription_details": {
        "items": [{"id": item_of(sub).id, "price": price2.id}]}}).status == "draft"
