"""PaymentIntents of invoices: confirming one with a payment method pays its invoice."""

from __future__ import annotations

from ..billing import cards, invoicing
from ..core.store import Store, StripeError
from ..customers import payment_methods
from ..subscriptions import pending


def confirm_payment_intent(store: Store, pi: dict, pm_id: str | None) -> dict:
    if pi["status"] in ("succeeded", "canceled"):
        raise StripeError(400, f"You cannot confirm this PaymentIntent because it has a "
                          f"status of {pi['status']}.", code="payment_intent_unexpected_state")
    pm_id = pm_id or pi["payment_method"]
    if not pm_id:
        raise StripeError(400, "You cannot confirm this PaymentIntent because it's missing a "
                          "payment method.", code="payment_intent_unexpected_state")
    pm = payment_methods.resolve_pm(store, pm_id)
    if pm["customer"] not in (None, pi["customer"]):
        raise StripeError(400, f"The provided PaymentMethod {pm['id']} belongs to another "
                          "customer.", param="payment_method")
    inv = store.invoices[pi["_invoice"]]
    if cards.card_outcome(pm) == "succeeded":
        payment_methods.attach_pm(store, pm, pi["customer"])
    status = invoicing.attempt(store, inv, pm)
    if status == "requires_payment_method":
        raise cards.decline_error(store, pi, pm)
    if status == "succeeded":
        pending.after_payment(store, inv, pm)
    return pi
