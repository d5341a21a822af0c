"""PaymentMethods: the card object, Stripe's test ids, attaching and detaching, a customer's default."""

from __future__ import annotations

import datetime as dt

from ..billing import cards
from ..billing.cards import TEST_CARDS
from ..core.store import Store, StripeError, new_id, public


def payment_method(store: Store, test_id: str, exp_month: int = 12, exp_year: int | None = None) -> dict:
    card = TEST_CARDS[test_id]
    year = exp_year or dt.datetime.fromtimestamp(store.now(), dt.UTC).year + 3
    return {
        "id": new_id("pm_"), "object": "payment_method", "allow_redisplay": "unspecified",
        "billing_details": {"address": {"city": None, "country": None, "line1": None,
                                        "line2": None, "postal_code": None, "state": None},
                            "email": None, "name": None, "phone": None, "tax_id": None},
        "card": {"brand": card["brand"], "checks": {"address_line1_check": None,
                                                    "address_postal_code_check": None,
                                                    "cvc_check": None},
                 "country": card.get("country", "US"), "display_brand": card["brand"], "exp_month": exp_month,
                 "exp_year": year, "fingerprint": cards.fingerprint(store, test_id), "funding": "credit",
                 "generated_from": None, "last4": card["last4"],
                 "networks": {"available": [card["brand"]], "preferred": None},
                 "regulated_status": "unregulated",
                 "three_d_secure_usage": {"supported": True}, "wallet": None},
        "created": store.now(), "customer": None, "livemode": False, "metadata": {},
        "type": "card", "customer_account": None, "_test_id": test_id,
    }


def resolve_pm(store: Store, pm_id: str, param: str = "payment_method") -> dict:
    """The PaymentMethod for ``pm_id``; a Stripe test id creates a fresh one each time."""
    if pm_id in TEST_CARDS:
        pm = payment_method(store, pm_id)
        store.payment_methods[pm["id"]] = pm
        return pm
    return store.get("payment_methods", pm_id, param)


def attach_pm(store: Store, pm: dict, customer_id: str) -> dict:
    if pm["customer"] == customer_id:
        return pm
    if pm["customer"] is not None:
        raise StripeError(400, "The payment method you provided has already been attached to "
                          "a customer.", code="payment_method_already_attached")
    pm["customer"] = customer_id
    store.emit("payment_method.attached", pm)
    return pm


def detach_pm(store: Store, pm: dict) -> dict:
    if pm["customer"] is None:
        raise StripeError(400, "The payment method you provided is not attached to a "
                          "customer so detachment is impossible.",
                          code="payment_method_unexpected_state")
    cus = store.customers.get(pm["customer"])
    pm["customer"] = None
    store.emit("payment_method.detached", pm)
    if cus and cus["invoice_settings"]["default_payment_method"] == pm["id"]:
        before = public(cus)
        cus["invoice_settings"]["default_payment_method"] = None
        store.emit("customer.updated", cus, before)
    return pm


def customer_pm(store: Store, customer_id: str, pm_id: str, param: str) -> str:
    """Validate a payment method given as a customer's or subscription's default.

    Test ids are attached on the fly for convenience; real ids must already belong to the
    customer, as Stripe requires.
    """
    if pm_id in TEST_CARDS:
        return attach_pm(store, resolve_pm(store, pm_id, param), customer_id)["id"]
    pm = store.get("payment_methods", pm_id, param)
    if pm["customer"] != customer_id:
        raise StripeError(400, f"The customer does not have a payment method with the ID "
                          f"{pm_id}. The payment method must be attached to the customer.",
                          code="resource_missing", param=param)
    return pm_id
