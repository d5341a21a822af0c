"""SetupIntents, Invoice.pay and the invoice PDF through the real SDK (issue 21)."""

from __future__ import annotations

import re

import pytest
import requests
import stripe

from tests.support.emulator import events_of, failing_renewal
from tests.support.events import openapi_example


def setup_for(client, customer, card="pm_card_visa"):
    seti = client.v1.setup_intents.create(params={"customer": customer.id, "usage": "off_session"})
    return client.v1.setup_intents.confirm(seti.id, params={"payment_method": card})


def types_of(client, seti_id):
    return [e.type for e in events_of(client) if e.type.startswith("setup_intent.") and e.data.object.id == seti_id]


def test_a_setup_intent_saves_the_card_on_the_customer_without_making_it_the_default(stripe_client, customer):
    seti = stripe_client.v1.setup_intents.create(params={"customer": customer.id, "usage": "off_session"})
    assert re.fullmatch(r"seti_[A-Za-z0-9]+_secret_[A-Za-z0-9]+", seti.client_secret)
    assert seti.status == "requires_payment_method" and seti.usage == "off_session"
    assert set(openapi_example("setup_intent")) <= set(seti.to_dict())
    done = stripe_client.v1.setup_intents.confirm(seti.id, params={"payment_method": "pm_card_mastercard"})
    assert done.status == "succeeded" and done.payment_method.startswith("pm_")
    assert stripe_client.v1.payment_methods.retrieve(done.payment_method).customer == customer.id
    assert stripe_client.v1.customers.retrieve(customer.id).invoice_settings.default_payment_method is None
    assert types_of(stripe_client, seti.id) == ["setup_intent.created", "setup_intent.succeeded"]
    assert stripe_client.v1.setup_intents.retrieve(seti.id).status == "succeeded"
    assert [s.id for s in stripe_client.v1.setup_intents.list(params={"customer": customer.id}).data] == [seti.id]
    with pytest.raises(stripe.InvalidRequestError) as again:
        stripe_client.v1.setup_intents.confirm(seti.id, params={"payment_method": "pm_card_visa"})
    assert again.value.code == "setup_intent_unexpected_state"


def test_a_declined_card_fails_the_set_up_and_another_card_may_follow(stripe_client, customer):
    seti = stripe_client.v1.setup_intents.create(params={"customer": customer.id})
    with pytest.raises(stripe.CardError) as declined:
        stripe_client.v1.setup_intents.confirm(seti.id, params={"payment_method": "pm_card_chargeDeclined"})
    assert declined.value.code == "card_declined" and declined.value.http_status == 402
    failed = stripe_client.v1.setup_intents.retrieve(seti.id)
    assert failed.status == "requires_payment_method" and failed.last_setup_error.code == "card_declined"
    assert stripe_client.v1.setup_intents.confirm(seti.id, params={"payment_method": "pm_card_visa"}).status == \
        "succeeded"
    assert types_of(stripe_client, seti.id) == ["setup_intent.created", "setup_intent.setup_failed",
                                                "setup_intent.succeeded"]


def test_a_card_that_needs_3d_secure_waits_for_authentication(stripe_client, customer):
    seti = setup_for(stripe_client, customer, "pm_card_authenticationRequired")
    assert seti.status == "requires_action" and seti.next_action.type == "use_stripe_sdk"
    assert "setup_intent.succeeded" not in types_of(stripe_client, seti.id)
    assert stripe_client.v1.payment_methods.list(params={"customer": customer.id}).data == []


def test_a_card_that_only_fails_when_charged_sets_up(stripe_client, customer):
    assert setup_for(stripe_client, customer, "pm_card_chargeCustomerFail").status == "succeeded"


def test_invoice_pay_recovers_a_past_due_subscription_with_the_new_card(stripe_client, emulator, customer, price):
    sub_id = failing_renewal(stripe_client, emulator, customer, price)
    invoice_id = stripe_client.v1.subscriptions.retrieve(sub_id).latest_invoice
    card = setup_for(stripe_client, customer).payment_method
    with pytest.raises(stripe.CardError):
        stripe_client.v1.invoices.pay(invoice_id, params={"payment_method": setup_for(
            stripe_client, customer, "pm_card_chargeCustomerFail").payment_method})
    assert stripe_client.v1.invoices.retrieve(invoice_id).status == "open"
    paid = stripe_client.v1.invoices.pay(invoice_id, params={"payment_method": card, "off_session": True})
    assert paid.status == "paid" and paid.amount_paid == paid.amount_due == 1500
    intent = stripe_client.v1.payment_intents.retrieve(
        stripe_client.v1.invoices.retrieve(invoice_id, params={"expand": ["payments"]}).payments.data[0]
        .payment.payment_intent)
    assert intent.payment_method == card and intent.status == "succeeded"
    assert stripe_client.v1.subscriptions.retrieve(sub_id).status == "active"
    recovered = events_of(stripe_client, sub_id, {"customer.subscription.updated"})[-1]
    assert recovered.data.previous_attributes["status"] == "past_due"
    with pytest.raises(stripe.InvalidRequestError) as again:
        stripe_client.v1.invoices.pay(invoice_id)
    assert again.value.code == "invoice_unexpected_state"


def test_an_invoice_pdf_is_a_pdf_of_the_invoice(stripe_client, customer, price):
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "payment_behavior": "default_incomplete",
        "expand": ["latest_invoice"]})
    invoice = sub.latest_invoice
    assert invoice.invoice_pdf == f"{invoice.hosted_invoice_url}/pdf"
    response = requests.get(invoice.invoice_pdf, timeout=10)
    assert response.status_code == 200 and response.headers["Content-Type"] == "application/pdf"
    body = response.content
    assert body.startswith(b"%PDF-1.4\n") and body.endswith(b"%%EOF\n")
    assert invoice.number.encode() in body and b"Amount due: 15.00 USD" in body
    # Every cross-reference entry points at the object it names, as a reader follows them.
    xref = int(re.search(rb"startxref\n(\d+)\n", body).group(1))
    offsets = [int(entry[:10]) for entry in body[xref:].split(b"\n")[3:8]]
    assert [body[offset:].split(b"\n", 1)[0] for offset in offsets] == [f"{n} 0 obj".encode() for n in range(1, 6)]
