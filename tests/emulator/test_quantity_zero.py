"""Quantity 0 on a subscription item (issue 43, "Stripe fidelity left"), accepted and refused where Stripe does.

Stripe keeps an item of a licensed price at quantity 0, billing it nothing ("If quantity is set to zero,
the subscription will act like a free plan, creating invoices but not charging customers", Stripe's docs
as quoted in https://github.com/stripe/stripe-go/issues/36; set by the API on subscription items,
https://github.com/stripe/openapi/issues/93). Checkout's line items refuse 0 ("This value must be greater
than or equal to 1.", the same issue), and every ``quantity`` refuses a negative number (Stripe's OpenAPI).
"""

from __future__ import annotations

import pytest
import stripe


@pytest.fixture
def card_customer(stripe_client, customer):
    pm = stripe_client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    stripe_client.v1.customers.update(customer.id, params={"invoice_settings": {"default_payment_method": pm.id}})
    return customer


def _subscribe(stripe_client, customer, price, quantity):
    return stripe_client.v1.subscriptions.create(params={
        "customer": customer.id, "items": [{"price": price.id, "quantity": quantity}]})


def test_a_subscription_item_of_quantity_0_is_kept_and_billed_nothing(stripe_client, card_customer, price):
    sub = _subscribe(stripe_client, card_customer, price, 0)
    assert (sub.status, sub["items"].data[0].quantity) == ("active", 0), "not read as the default of 1"
    invoice = stripe_client.v1.invoices.retrieve(sub.latest_invoice)
    assert (invoice.status, invoice.amount_due, [line.quantity for line in invoice.lines.data]) == ("paid", 0, [0])


def test_updating_an_item_to_quantity_0_and_back(stripe_client, card_customer, price):
    sub = _subscribe(stripe_client, card_customer, price, 2)
    item = sub["items"].data[0]
    zero = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item.id, "quantity": 0}], "proration_behavior": "none"})
    assert zero["items"].data[0].quantity == 0
    again = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": item.id, "quantity": 3}], "proration_behavior": "none"})
    assert again["items"].data[0].quantity == 3


def test_a_negative_quantity_is_refused_everywhere(stripe_client, card_customer, price):
    with pytest.raises(stripe.InvalidRequestError) as created:
        _subscribe(stripe_client, card_customer, price, -1)
    sub = _subscribe(stripe_client, card_customer, price, 1)
    with pytest.raises(stripe.InvalidRequestError) as updated:
        stripe_client.v1.subscriptions.update(sub.id, params={
            "items": [{"id": sub["items"].data[0].id, "quantity": -1}]})
    for refused, param in ((created, "items[0][quantity]"), (updated, "items[0][quantity]")):
        assert (refused.value.http_status, refused.value.code, refused.value.param) == (
            400, "parameter_invalid_integer", param)
    assert stripe_client.v1.subscriptions.retrieve(sub.id)["items"].data[0].quantity == 1


@pytest.mark.parametrize("quantity, message", [(0, "greater than or equal to 1"), (-1, "greater than or equal to 0")])
def test_checkout_line_items_refuse_0_and_negative(stripe_client, customer, price, quantity, message):
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.checkout.sessions.create(params={
            "mode": "subscription", "customer": customer.id, "success_url": "http://127.0.0.1:9/ok",
            "line_items": [{"price": price.id, "quantity": quantity}]})
    assert (refused.value.http_status, refused.value.param) == (400, "line_items[0][quantity]")
    assert message in refused.value.user_message
    assert stripe_client.v1.checkout.sessions.list(params={"customer": customer.id}).data == []
