"""Stripe's test cards and how a charge of each ends (https://docs.stripe.com/testing).

Which method pays a subscription, what a charge's outcome is, and the card error a decline answers.
"""

from __future__ import annotations

import datetime as dt

from ..core.store import Store, StripeError, new_id, public

# Stripe's test PaymentMethod ids. Using one creates a fresh pm_ object, as Stripe does.
TEST_CARDS = {
    "pm_card_visa": {"brand": "visa", "last4": "4242"},
    "pm_card_mastercard": {"brand": "mastercard", "last4": "4444"},
    "pm_card_amex": {"brand": "amex", "last4": "8431"},
    "pm_card_chargeDeclined": {"brand": "visa", "last4": "0002",
                               "decline": ("card_declined", "generic_decline")},
    "pm_card_authenticationRequired": {"brand": "visa", "last4": "3184", "requires_action": True},
    # Attaching it (and setting it up) succeeds, charging it fails (Stripe's 4000000000000341): a
    # renewal that fails.
    "pm_card_chargeCustomerFail": {"brand": "visa", "last4": "0341", "sets_up": True,
                                   "decline": ("card_declined", "generic_decline")},
    # Cards issued abroad (https://docs.stripe.com/testing#international-cards): their ``card.country``
    # locates a customer for Stripe Tax when nothing else does (``billing/tax.py``).
    "pm_card_de": {"brand": "visa", "last4": "0016", "country": "DE"},
    "pm_card_fr": {"brand": "visa", "last4": "0003", "country": "FR"},
    "pm_card_gb": {"brand": "visa", "last4": "0000", "country": "GB"},
    "pm_card_au": {"brand": "visa", "last4": "0006", "country": "AU"},
}


# Stripe's test tokens, ``card[token]`` of ``POST /v1/payment_methods`` -> the test id they act as.
TEST_CARD_TOKENS = {"tok_" + test_id.removeprefix("pm_card_"): test_id for test_id in TEST_CARDS}

# Card numbers ``POST /v1/payment_methods`` accepts (Stripe's test numbers) -> the test id they act as.
TEST_CARD_NUMBERS = {
    "4242424242424242": "pm_card_visa",
    "5555555555554444": "pm_card_mastercard",
    "378282246310005": "pm_card_amex",
    "4000000000000002": "pm_card_chargeDeclined",
    "4000002500003155": "pm_card_authenticationRequired",
    "4000000000000341": "pm_card_chargeCustomerFail",
    "4000002760000016": "pm_card_de",
    "4000002500000003": "pm_card_fr",
    "4000008260000000": "pm_card_gb",
    "4000000360000006": "pm_card_au",
}


def card_outcome(pm: dict | None, now: int | None = None) -> str:
    """How a charge of ``pm`` ends: ``succeeded``, ``declined`` or ``requires_action``.

    With ``now`` (a charge at that emulator time), a card past its expiry month is declined.
    """
    card = TEST_CARDS.get((pm or {}).get("_test_id"), {})
    if pm is None or "decline" in card or (now is not None and expired(pm, now)):
        return "declined"
    return "requires_action" if card.get("requires_action") else "succeeded"


def expired(pm: dict, now: int) -> bool:
    """Whether the card ``pm`` is past its expiry month at ``now`` (Unix seconds, UTC)."""
    card = pm.get("card") or {}
    year, month = divmod(card.get("exp_year", 9999) * 12 + card.get("exp_month", 12), 12)
    return now >= int(dt.datetime(year, month + 1, 1, tzinfo=dt.UTC).timestamp())


def decline_error(store: Store, pi: dict | None, pm: dict | None, message: str | None = None,
                  decline_code: str = "generic_decline") -> StripeError:
    extra = {"decline_code": decline_code, "charge": new_id("ch_")}
    if pi is not None:
        extra["payment_intent"] = public(pi)
    if pm is not None:
        extra["payment_method"] = public(pm)
    return StripeError(402, message or "Your card was declined.", type="card_error",
                       code="card_declined", param="", **extra)


def paying_method(store: Store, sub: dict) -> dict | None:
    """The method Stripe charges: the subscription's default, else the customer's."""
    cus = store.customers.get(sub["customer"]) or {}
    pm_id = sub["default_payment_method"] or \
        (cus.get("invoice_settings") or {}).get("default_payment_method")
    return store.payment_methods.get(pm_id or "")


def fingerprint(store: Store, test_id: str) -> str:
    """The card's fingerprint in this account: one per card, whichever test id, number or token named it."""
    return store.card_fingerprints.setdefault(test_id, new_id("", 16))
