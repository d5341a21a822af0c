"""Automatic tax locates the customer as Stripe Tax does (https://docs.stripe.com/tax/customer-locations),
issue 32 item 1: shipping, then billing address, then the paying card's country; unlocated, a subscription's
invoice finalizes untaxed with ``disabled_reason``; ``tax[validate_location]=immediately`` refuses at once."""

from __future__ import annotations

import pytest
import stripe


def _customer(stripe_client, card="pm_card_visa", **details):
    return stripe_client.v1.customers.create(params={
        "email": "tax@example.com", "payment_method": card,
        "invoice_settings": {"default_payment_method": card}, **details})


def _taxed_subscription(stripe_client, customer, price):
    return stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "automatic_tax": {"enabled": True},
        "expand": ["latest_invoice"]})


def test_without_an_address_the_card_country_locates_the_customer(stripe_client, price):
    sub = _taxed_subscription(stripe_client, _customer(stripe_client, card="pm_card_de"), price)
    invoice = sub.latest_invoice
    assert (invoice.automatic_tax.status, invoice.customer_address.country) == ("complete", "DE")
    assert invoice.total_taxes[0].amount == round(price.unit_amount * 0.19)
    assert invoice.total == invoice.subtotal + invoice.total_taxes[0].amount


def test_the_shipping_address_comes_before_the_billing_address(stripe_client, price):
    customer = _customer(stripe_client, address={"country": "DE"},
                         shipping={"name": "Jo", "address": {"country": "FR", "line1": "1 rue X"}})
    assert (customer.address.country, customer.shipping.address.country) == ("DE", "FR"), "create applies both"
    invoice = _taxed_subscription(stripe_client, customer, price).latest_invoice
    assert invoice.customer_address.country == "FR"
    assert invoice.total_taxes[0].amount == round(price.unit_amount * 0.20)


def test_an_unlocated_customer_is_billed_untaxed_and_automatic_tax_is_turned_off(stripe_client, price):
    customer = _customer(stripe_client)  # a US card, no postal code: not precise enough
    sub = _taxed_subscription(stripe_client, customer, price)
    invoice = sub.latest_invoice
    assert (invoice.automatic_tax.enabled, invoice.automatic_tax.disabled_reason) == (
        False, "finalization_requires_location_inputs")
    assert invoice.total_taxes == [] and invoice.total == invoice.subtotal
    assert (sub.automatic_tax.enabled, sub.automatic_tax.disabled_reason) == (False, "requires_location_inputs")


def test_a_preview_says_requires_location_inputs(stripe_client, price):
    customer = _customer(stripe_client)
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                        "customer": customer.id, "items": [{"price": price.id}]})
    preview = stripe_client.v1.invoices.create_preview(params={
        "subscription": sub.id, "automatic_tax": {"enabled": True}})
    assert preview.automatic_tax.status == "requires_location_inputs" and preview.total_taxes == []
    stripe_client.v1.customers.update(customer.id, params={"address": {"country": "US", "postal_code": "94107"}})
    located = stripe_client.v1.invoices.create_preview(params={
        "subscription": sub.id, "automatic_tax": {"enabled": True}})
    assert (located.automatic_tax.status, located.customer_address.postal_code) == ("complete", "94107")


def test_validate_location_immediately_refuses_an_address_that_does_not_locate(stripe_client):
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.customers.create(params={"address": {"country": "US"},
                                                  "tax": {"validate_location": "immediately"}})
    assert (refused.value.code, refused.value.param) == ("customer_tax_location_invalid", "address")
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.customers.create(params={"tax": {"validate_location": "immediately"}})
    located = stripe_client.v1.customers.create(params={
        "address": {"country": "US", "postal_code": "94107"}, "tax": {"validate_location": "immediately"}})
    with pytest.raises(stripe.InvalidRequestError) as update:
        stripe_client.v1.customers.update(located.id, params={
            "address": {"country": "ZZ"}, "tax": {"validate_location": "immediately"}})
    assert update.value.code == "customer_tax_location_invalid"
    assert stripe_client.v1.customers.retrieve(located.id).address.country == "US", "nothing changed"
    deferred = stripe_client.v1.customers.create(params={"address": {"country": "US"}})
    assert deferred.address.country == "US", "deferred (the default) takes it as it is"


def test_customer_create_applies_its_tax_and_locale_details(stripe_client):
    customer = stripe_client.v1.customers.create(params={"tax_exempt": "reverse", "preferred_locales": ["de", "en"]})
    assert (customer.tax_exempt, customer.preferred_locales) == ("reverse", ["de", "en"])
