"""Subscription lifecycles driven through the real SDK, checking state and events."""

from __future__ import annotations

import re

import pytest
import stripe

from tests.support.emulator import DAY, activate, create_incomplete, events_of, pi_id_of


def test_default_incomplete_confirm_active(stripe_client, customer, price):
    sub = create_incomplete(stripe_client, customer, price)
    assert re.fullmatch(r"sub_[A-Za-z0-9]{24}", sub.id)
    assert sub.status == "incomplete"
    inv = sub.latest_invoice
    assert inv.id.startswith("in_") and inv.status == "open" and inv.amount_due == 1500
    assert inv.parent.subscription_details.subscription == sub.id
    secret = inv.confirmation_secret
    assert secret.type == "payment_intent"
    assert re.fullmatch(r"pi_[A-Za-z0-9]+_secret_[A-Za-z0-9]+", secret.client_secret)
    item = sub["items"].data[0]
    assert item.id.startswith("si_") and item.price.id == price.id
    assert item.current_period_end > item.current_period_start
    assert "current_period_end" not in sub  # 2025-03-31+ layout: periods live on items
    assert sub.metadata.to_dict() == {"user_id": "42"}

    pi = stripe_client.v1.payment_intents.confirm(pi_id_of(sub),
                                                  params={"payment_method": "pm_card_visa"})
    assert pi.status == "succeeded" and pi.payment_method.startswith("pm_")
    assert pi.payment_method != "pm_card_visa"  # a test id yields a fresh PaymentMethod
    sub = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert sub.status == "active"
    assert sub.latest_invoice.status == "paid"
    assert sub.default_payment_method == pi.payment_method
    cus = stripe_client.v1.customers.retrieve(customer.id)
    # save_default_payment_method sets the subscription's default, not the customer's.
    assert cus.invoice_settings.default_payment_method is None
    pms = stripe_client.v1.payment_methods.list(params={"customer": customer.id})
    assert [p.id for p in pms.data] == [pi.payment_method]
    assert pms.data[0].card.brand == "visa" and pms.data[0].card.last4 == "4242"

    types = [e.type for e in events_of(stripe_client)]
    assert types == [
        "customer.created", "product.created", "price.created",
        "customer.subscription.created", "invoice.created", "invoice.finalized",
        "payment_intent.created", "payment_method.attached", "payment_intent.succeeded",
        "invoice.paid", "invoice.payment_succeeded", "customer.subscription.updated"]
    created, updated = events_of(stripe_client, sub.id, {
        "customer.subscription.created", "customer.subscription.updated"})
    assert created.data.object.status == "incomplete"
    assert updated.data.previous_attributes.to_dict() == {
        "status": "incomplete", "default_payment_method": None}
    assert updated.data.object.status == "active"


def test_declined_card_keeps_incomplete(stripe_client, customer, price):
    sub = create_incomplete(stripe_client, customer, price)
    with pytest.raises(stripe.CardError) as excinfo:
        stripe_client.v1.payment_intents.confirm(
            pi_id_of(sub), params={"payment_method": "pm_card_chargeDeclined"})
    err = excinfo.value
    assert err.http_status == 402 and err.code == "card_declined"
    assert err.error.type == "card_error" and err.error.decline_code == "generic_decline"
    assert err.error.payment_intent.id == pi_id_of(sub)
    pi = stripe_client.v1.payment_intents.retrieve(pi_id_of(sub))
    assert pi.status == "requires_payment_method"
    assert pi.last_payment_error.code == "card_declined"
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "incomplete"
    types = [e.type for e in events_of(stripe_client)]
    assert "payment_intent.payment_failed" in types and "invoice.payment_failed" in types
    assert "customer.subscription.updated" not in types
    # A second attempt with a good card completes the same invoice.
    stripe_client.v1.payment_intents.confirm(pi_id_of(sub),
                                             params={"payment_method": "pm_card_mastercard"})
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "active"


def test_authentication_required_card(stripe_client, customer, price):
    sub = create_incomplete(stripe_client, customer, price)
    pi = stripe_client.v1.payment_intents.confirm(
        pi_id_of(sub), params={"payment_method": "pm_card_authenticationRequired"})
    assert pi.status == "requires_action" and pi.next_action.type == "use_stripe_sdk"
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "incomplete"


def test_immediate_payment_with_customer_default(stripe_client, customer, price):
    pm = stripe_client.v1.payment_methods.attach("pm_card_visa",
                                                 params={"customer": customer.id})
    stripe_client.v1.customers.update(customer.id, params={
        "invoice_settings": {"default_payment_method": pm.id}})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}],
        "expand": ["latest_invoice"]})
    assert sub.status == "active" and sub.latest_invoice.status == "paid"
    created = events_of(stripe_client, sub.id, {"customer.subscription.created"})[0]
    assert created.data.object.status == "active"


def test_immediate_payment_declined(stripe_client, customer, price):
    stripe_client.v1.customers.update(customer.id, params={
        "invoice_settings": {"default_payment_method": "pm_card_chargeDeclined"}})
    with pytest.raises(stripe.CardError):
        stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer.id, "items": [{"price": price.id}],
            "payment_behavior": "error_if_incomplete"})
    assert stripe_client.v1.subscriptions.list(params={"status": "all"}).data == []
    # allow_incomplete (the default) creates an incomplete subscription instead.
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}]})
    assert sub.status == "incomplete"


def test_no_payment_method_is_an_error(stripe_client, customer, price):
    with pytest.raises(stripe.InvalidRequestError) as excinfo:
        stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer.id, "items": [{"price": price.id}]})
    assert excinfo.value.code == "resource_missing"


def test_cancel_at_period_end_and_resume(stripe_client, emulator, customer, price):
    sub = activate(stripe_client, customer, price)
    end = sub["items"].data[0].current_period_end
    sub = stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True})
    assert sub.cancel_at_period_end and sub.cancel_at == end and sub.canceled_at
    sub = stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": False})
    assert not sub.cancel_at_period_end and sub.cancel_at is None
    scheduled, resumed = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[1:]
    assert scheduled.data.previous_attributes.to_dict() == {
        "cancel_at_period_end": False, "cancel_at": None, "canceled_at": None,
        "cancellation_details": {"reason": None}}
    assert resumed.data.previous_attributes.to_dict() == {
        "cancel_at_period_end": True, "cancel_at": end,
        "canceled_at": scheduled.data.object.canceled_at,
        "cancellation_details": {"reason": "cancellation_requested"}}
    stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True})
    emulator.advance(end - emulator.clock() + 1)
    sub = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert sub.status == "canceled" and sub.ended_at == end
    deleted = events_of(stripe_client, sub.id, {"customer.subscription.deleted"})
    assert len(deleted) == 1 and deleted[0].data.object.status == "canceled"


def test_price_swap_previous_items(stripe_client, customer, price, price2):
    sub = activate(stripe_client, customer, price)
    item = sub["items"].data[0]
    sub = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item.id, "price": price2.id}], "proration_behavior": "none"})
    assert sub["items"].data[0].id == item.id
    assert sub["items"].data[0].price.id == price2.id
    upd = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    prev = upd.data.previous_attributes.to_dict()
    assert list(prev) == ["items"]
    assert prev["items"]["object"] == "list"
    assert prev["items"]["data"][0]["id"] == item.id
    assert prev["items"]["data"][0]["price"]["id"] == price.id
    assert prev["items"]["data"][0]["plan"]["id"] == price.id


def test_cancel_now(stripe_client, customer, price):
    sub = activate(stripe_client, customer, price)
    sub = stripe_client.v1.subscriptions.cancel(sub.id)
    assert sub.status == "canceled" and sub.ended_at and sub.canceled_at
    assert events_of(stripe_client)[-1].type == "customer.subscription.deleted"
    assert stripe_client.v1.subscriptions.list(params={"customer": customer.id}).data == []
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True})


def test_renewal(stripe_client, emulator, customer, price):
    sub = activate(stripe_client, customer, price)
    old_item = sub["items"].data[0]
    emulator.advance(old_item.current_period_end - emulator.clock() + 1)
    sub = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    item = sub["items"].data[0]
    assert sub.status == "active"
    assert item.current_period_start == old_item.current_period_end
    assert item.current_period_end > item.current_period_start
    assert sub.latest_invoice.billing_reason == "subscription_cycle"
    assert sub.latest_invoice.status == "paid"
    upd = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    prev = upd.data.previous_attributes.to_dict()
    assert set(prev.keys()) == {"items", "latest_invoice"}
    assert prev["items"]["data"][0]["current_period_end"] == old_item.current_period_end
    types = [e.type for e in events_of(stripe_client, sub.id)]
    assert types[-5:] == ["customer.subscription.updated", "invoice.created",
                          "invoice.finalized", "invoice.paid", "invoice.payment_succeeded"]


def test_failed_renewal_then_recovery(stripe_client, emulator, customer, price):
    sub = activate(stripe_client, customer, price)
    emulator.fail_next_renewal(sub.id)
    emulator.advance(sub["items"].data[0].current_period_end - emulator.clock() + 1)
    sub = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert sub.status == "past_due" and sub.latest_invoice.status == "open"
    failed = events_of(stripe_client, sub.id, {"invoice.payment_failed"})[-1]
    assert failed.data.object.billing_reason == "subscription_cycle"
    assert failed.data.object.parent.subscription_details.subscription == sub.id
    last = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    assert last.data.previous_attributes.to_dict() == {"status": "active"}
    # The customer pays the open invoice with another card: back to active.
    inv = stripe_client.v1.invoices.retrieve(sub.latest_invoice.id,
                                             params={"expand": ["confirmation_secret"]})
    pi_id = inv.confirmation_secret.client_secret.split("_secret_")[0]
    stripe_client.v1.payment_intents.confirm(pi_id, params={"payment_method": "pm_card_amex"})
    sub = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert sub.status == "active"
    last = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    assert last.data.previous_attributes["status"] == "past_due"


def test_trial_then_active(stripe_client, emulator, customer, price):
    stripe_client.v1.customers.update(customer.id, params={
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 7})
    assert sub.status == "trialing" and sub.trial_end - sub.trial_start == 7 * DAY
    assert sub["items"].data[0].current_period_end == sub.trial_end
    emulator.advance(7 * DAY + 1)
    sub = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert sub.status == "active"
    upd = events_of(stripe_client, sub.id, {"customer.subscription.updated"})[-1]
    assert upd.data.previous_attributes["status"] == "trialing"
    assert upd.request.id is None  # automatic, not API-initiated


def test_incomplete_expires(stripe_client, emulator, customer, price):
    sub = create_incomplete(stripe_client, customer, price)
    emulator.advance(23 * 3600 + 1)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "incomplete_expired"


def test_list_filters_and_pagination(stripe_client, customer, price, price2):
    subs = [create_incomplete(stripe_client, customer, price if i % 2 else price2)
            for i in range(5)]
    page = stripe_client.v1.subscriptions.list(params={"customer": customer.id, "limit": 2})
    assert len(page.data) == 2 and page.has_more
    assert [s.id for s in page.data] == [subs[4].id, subs[3].id]  # newest first
    page2 = stripe_client.v1.subscriptions.list(params={
        "customer": customer.id, "limit": 2, "starting_after": page.data[-1].id})
    assert [s.id for s in page2.data] == [subs[2].id, subs[1].id]
    all_ids = [s.id for s in stripe_client.v1.subscriptions.list(
        params={"customer": customer.id, "limit": 2}).auto_paging_iter()]
    assert all_ids == [s.id for s in reversed(subs)]
    by_price = stripe_client.v1.subscriptions.list(params={"price": price.id})
    assert {s.id for s in by_price.data} == {subs[1].id, subs[3].id}
    stripe_client.v1.subscriptions.cancel(subs[0].id)
    assert len(stripe_client.v1.subscriptions.list(params={"status": "all"}).data) == 5
    assert [s.id for s in stripe_client.v1.subscriptions.list(
        params={"status": "canceled"}).data] == [subs[0].id]
    assert len(stripe_client.v1.subscriptions.list().data) == 4
