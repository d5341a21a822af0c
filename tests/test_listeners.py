"""``CommitPaymentMethod`` through signed deliveries, with the emulator as the provider (SPEC 6 listener rule 2).

The invoice branch (old top-level and new ``parent.subscription_details`` shapes, the method on the
invoice or on its payment intent), "already the default: no provider write", and ``customer.updated``
mirroring the live customer's card, also when its events arrive newest first.
"""
import json
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from flask import request, request_started
from sqlalchemy import select

from app.extensions import db
from app.models import User
from tests.support.events import deliver, load_event


@dataclass
class Paid:
    customer: str
    subscription: str
    payment_intent: str
    payment_method: str
    created: int  # of the subscription's created event, which the service has applied


def accepted(response):
    assert response.status_code == 200, response.json
    return response


def provider_events(stripe_client, event_type):
    """Return the emulator's events of ``event_type``, oldest first, as the JSON it delivers."""
    page = stripe_client.v1.events.list(params={"type": event_type, "limit": 100})
    # The SDK turns Stripe's decimal strings into Decimal; back to the JSON the provider sends.
    return [json.loads(json.dumps(event.to_dict(), default=str)) for event in page.data][::-1]


def card(app):
    with app.app_context():
        user = db.session.scalars(select(User)).one()
        return user.pm_type, user.pm_last_four


def live_default(stripe_client, customer):
    return stripe_client.v1.customers.retrieve(customer).invoice_settings.default_payment_method


def attach(stripe_client, customer, test_card):
    return stripe_client.v1.payment_methods.attach(test_card, params={"customer": customer}).id


@contextmanager
def customer_writes(emulator):
    """Collect the paths of the ``POST /v1/customers/<id>`` requests the emulator serves meanwhile."""
    paths = []

    def record(sender, **extra):
        if request.method == "POST" and request.path.startswith("/v1/customers/"):
            paths.append(request.path)

    with request_started.connected_to(record, emulator.app):
        yield paths


@pytest.fixture
def paid(app, provider_customer, stripe_client, prices):
    """A subscription paid with a Mastercard at the provider; the service has seen only its creation.

    Its row has no ``default_payment_method`` and, the method being saved on the subscription only,
    the customer has no default: the invoice event is what tells the listener which card paid.
    """
    created = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": provider_customer, "items": [{"price": prices["basic"]}], "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "expand": ["latest_invoice.confirmation_secret"]})
    intent = created.latest_invoice.confirmation_secret.client_secret.split("_secret_")[0]
    method = stripe_client.v1.payment_intents.confirm(intent, params={"payment_method": "pm_card_mastercard"})
    (created_event,) = provider_events(stripe_client, "customer.subscription.created")
    assert created_event["data"]["object"]["default_payment_method"] is None
    accepted(deliver(app.test_client(), created_event))
    assert live_default(stripe_client, provider_customer) is None and card(app) == (None, None)
    return Paid(provider_customer, created.id, intent, method.payment_method, created_event["created"])


def old_shape_with_method(invoice, paid):
    invoice["subscription"] = paid.subscription
    invoice["default_payment_method"] = paid.payment_method


def parent_shape_with_intent(invoice, paid):
    invoice["parent"]["subscription_details"]["subscription"] = paid.subscription
    invoice["payment_intent"] = paid.payment_intent


def parent_shape_with_payments(invoice, paid):
    invoice["parent"]["subscription_details"]["subscription"] = paid.subscription
    invoice["payments"] = {"object": "list", "data": [
        {"object": "invoice_payment", "payment": {"type": "payment_intent", "payment_intent": paid.payment_intent}}]}


INVOICES = {
    # 19: invoice.payment_succeeded, subscription at the top level (API 2018).
    "top-level-subscription-invoice-method": ("19", "invoice.payment_succeeded", old_shape_with_method),
    # 20: the subscription only under parent.subscription_details (API 2025); sent here as invoice.paid.
    "parent-subscription-payment-intent": ("20", "invoice.paid", parent_shape_with_intent),
    "parent-subscription-invoice-payments": ("20", "invoice.paid", parent_shape_with_payments),
}


def invoice_event(paid, shape):
    name, event_type, fill = INVOICES[shape]
    event = load_event(name, type=event_type, created=paid.created + 60)
    invoice = event["data"]["object"]
    invoice["customer"] = paid.customer
    fill(invoice, paid)
    return event


@pytest.mark.parametrize("shape", list(INVOICES))
def test_a_paid_invoice_promotes_the_card_that_paid_it(app, client, emulator, stripe_client, paid, shape):
    with customer_writes(emulator) as writes:
        accepted(deliver(client, invoice_event(paid, shape)))
    assert live_default(stripe_client, paid.customer) == paid.payment_method
    assert writes == [f"/v1/customers/{paid.customer}"]
    assert card(app) == ("mastercard", "4444")


def test_promoting_the_method_that_is_already_the_default_writes_nothing(app, client, emulator, stripe_client, paid):
    stripe_client.v1.customers.update(
        paid.customer, params={"invoice_settings": {"default_payment_method": paid.payment_method}})
    with customer_writes(emulator) as writes:
        accepted(deliver(client, invoice_event(paid, "parent-subscription-payment-intent")))
    assert writes == []
    assert card(app) == ("mastercard", "4444"), "the card is still mirrored"


def test_an_invoice_whose_payment_intent_the_provider_refuses_promotes_nothing(app, client, emulator, paid):
    event = invoice_event(paid, "parent-subscription-payment-intent")
    event["data"]["object"]["payment_intent"] = "pi_unknown"
    with customer_writes(emulator) as writes:
        accepted(deliver(client, event))  # a 5xx would have the provider repeat the refusal for days
    assert writes == [] and card(app) == (None, None)


def test_a_customer_update_setting_the_default_mirrors_its_card(app, client, provider_customer, stripe_client):
    visa = attach(stripe_client, provider_customer, "pm_card_visa")
    stripe_client.v1.customers.update(provider_customer, params={"invoice_settings": {"default_payment_method": visa}})
    (event,) = provider_events(stripe_client, "customer.updated")
    assert "invoice_settings" in event["data"]["previous_attributes"]
    accepted(deliver(client, event))
    assert card(app) == ("visa", "4242")


def test_customer_updates_delivered_newest_first_leave_the_live_default_card(app, client, provider_customer,
                                                                            stripe_client):
    visa = attach(stripe_client, provider_customer, "pm_card_visa")
    mastercard = attach(stripe_client, provider_customer, "pm_card_mastercard")
    for method in (visa, mastercard):
        stripe_client.v1.customers.update(provider_customer,
                                          params={"invoice_settings": {"default_payment_method": method}})
    set_visa, set_mastercard = provider_events(stripe_client, "customer.updated")
    accepted(deliver(client, set_mastercard))
    accepted(deliver(client, set_visa))  # older, delivered late: its payload still names the visa
    assert live_default(stripe_client, provider_customer) == mastercard
    assert card(app) == ("mastercard", "4444")
