"""Voiding the invoice of a pending update cancels the update, through the real SDK.

"To cancel a pending update, you need to void the invoice the update created"
(https://docs.stripe.com/billing/subscriptions/pending-updates#canceling-changing); "the ``pending_update`` hash
is cleared and the associated changes are discarded" (https://docs.stripe.com/billing/subscriptions/pending-updates-reference).
"""

from __future__ import annotations

import pytest
import requests
import stripe

from tests.support.emulator import activate, create_incomplete, events_of


def item_of(sub):
    return sub["items"].data[0]


def declined_seat(client, customer, price):
    """A subscription of one seat whose second seat's charge was declined: ``(subscription, pending invoice)``."""
    sub = activate(client, customer, price)
    method = client.v1.payment_methods.attach("pm_card_chargeCustomerFail", params={"customer": customer.id})
    client.v1.subscriptions.update(sub.id, params={"default_payment_method": method.id})
    updated = client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item_of(sub).id, "quantity": 2}], "proration_behavior": "always_invoice",
        "payment_behavior": "pending_if_incomplete", "expand": ["latest_invoice"]})
    assert updated.pending_update.subscription_items[0].quantity == 2 and item_of(updated).quantity == 1
    assert updated.latest_invoice.status == "open"
    return updated, updated.latest_invoice


def test_voiding_the_pending_updates_invoice_discards_the_update(stripe_client, customer, price):
    sub, invoice = declined_seat(stripe_client, customer, price)
    voided = stripe_client.v1.invoices.void_invoice(invoice.id)
    assert voided.status == "void"
    after = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert after.pending_update is None and item_of(after).quantity == 1, "the old quantity stays"
    assert after.status == "active"
    types = [event.type for event in events_of(stripe_client, sub.id)]
    assert types[-1] == "customer.subscription.updated"
    assert "customer.subscription.pending_update_applied" not in types


def test_a_voided_pending_invoice_can_no_longer_be_paid(stripe_client, customer, price):
    sub, invoice = declined_seat(stripe_client, customer, price)
    stripe_client.v1.invoices.void_invoice(invoice.id)
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.invoices.pay(invoice.id, params={"payment_method": "pm_card_visa"})
    assert refused.value.code == "invoice_unexpected_state"
    page = requests.post(f"{invoice.hosted_invoice_url}/pay", data={"payment_method": "pm_card_visa"}, timeout=10)
    assert "error=" in page.url, "the hosted page refuses it"
    after = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert item_of(after).quantity == 1 and after.pending_update is None
    assert stripe_client.v1.invoices.retrieve(invoice.id).amount_paid == 0


def test_voiding_another_invoice_leaves_the_pending_update(stripe_client, customer, price):
    sub, invoice = declined_seat(stripe_client, customer, price)
    other = create_incomplete(stripe_client, customer, price)
    stripe_client.v1.invoices.void_invoice(other.latest_invoice.id)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).pending_update is not None
