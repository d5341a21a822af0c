"""Builders of the invoice side of billing in the 2026-10-28 API shape: invoices, their lines, their
PaymentIntents. Stored unexpanded; keys starting with ``_`` are emulator bookkeeping."""

from __future__ import annotations

from ..core.lists import list_object
from ..core.store import Store, new_id
from . import discounts, tax


def invoice_line(sub_id: str, item_id: str, p: dict, quantity: int, amount: int, start: int, end: int,
                 description: str | None = None, proration: bool = False) -> dict:
    """One line of a subscription invoice; ``amount`` in minor units (negative for a credit)."""
    interval = (p["recurring"] or {}).get("interval")
    return {
        "id": new_id("il_"), "object": "line_item", "amount": amount, "currency": p["currency"],
        "description": description or f"{quantity} × (at {p['unit_amount']} / {interval})",
        "discount_amounts": [], "discountable": not proration, "discounts": [], "invoice": None,
        "livemode": False, "metadata": {}, "period": {"start": start, "end": end},
        "parent": {"type": "subscription_item_details", "invoice_item_details": None,
                   "subscription_item_details": {
                       "invoice_item": new_id("ii_") if proration else None, "proration": proration,
                       "proration_details": {"credited_items": None},
                       "subscription": sub_id, "subscription_item": item_id}},
        "pricing": {"type": "price_details",
                    "price_details": {"price": p["id"], "product": p["product"]},
                    "unit_amount_decimal": p["unit_amount_decimal"]},
        "quantity": quantity, "subtotal": amount, "taxes": [],
    }


def period_lines(sub: dict, start: int, end: int, free: bool = False) -> list[dict]:
    """The lines charging each licensed item of ``sub`` for the period ``start``-``end`` in advance (nothing
    on a trial); a metered item is billed in arrears for its usage (``subscriptions/renewals.py``)."""
    return [invoice_line(sub["id"], item["id"], item["price"], item["quantity"],
                         0 if free else item["price"]["unit_amount"] * item["quantity"], start, end)
            for item in sub["items"]["data"] if "quantity" in item]


def invoice(store: Store, sub: dict, billing_reason: str, start: int, end: int,
            lines: list[dict] | None = None, discount_ids: list | None = None,
            automatic_tax: bool | None = None) -> dict:
    """A draft invoice of ``sub``: the given ``lines``, else the items' charge for ``start``-``end``;
    less the subscription's discount (``discount_ids``: a preview's planned ones instead), plus the
    ``automatic_tax`` stand-in's tax when the subscription (or the preview: ``automatic_tax``) asks."""
    cus = store.customers.get(sub["customer"]) or {}
    inv_id = new_id("in_")
    if lines is None:
        trial = billing_reason == "subscription_create" and sub["status"] == "trialing"
        lines = period_lines(sub, start, end, free=trial)
    for line in lines:
        line["invoice"] = inv_id
    total = sum(line["amount"] for line in lines)
    due = max(0, total)  # a credit larger than the charge goes to the customer's balance
    now = store.now()
    inv = {
        "id": inv_id, "object": "invoice", "account_country": "US",
        "account_name": "Stripe Emulator", "amount_due": due, "amount_overpaid": 0,
        "amount_paid": 0, "amount_remaining": due, "amount_shipping": 0,
        "attempt_count": 0, "attempted": False, "auto_advance": True,
        "automatic_tax": {"enabled": False, "liability": None, "status": None},
        "billing_reason": billing_reason, "collection_method": "charge_automatically",
        "created": now, "currency": sub["items"]["data"][0]["price"]["currency"],
        "customer": sub["customer"], "customer_email": cus.get("email"),
        "customer_name": cus.get("name"), "default_payment_method": None,
        "description": None, "discounts": [], "due_date": None, "effective_at": None,
        "hosted_invoice_url": None, "invoice_pdf": None, "issuer": {"type": "self"},
        "last_finalization_error": None, "latest_revision": None,
        "lines": list_object(lines, f"/v1/invoices/{inv_id}/lines"), "livemode": False,
        "metadata": {}, "next_payment_attempt": None, "number": None,
        "parent": {"type": "subscription_details", "quote_details": None,
                   "subscription_details": {"metadata": dict(sub["metadata"]),
                                            "subscription": sub["id"]}},
        "period_end": start, "period_start": start, "receipt_number": None,
        "starting_balance": 0, "statement_descriptor": None, "status": "draft",
        "status_transitions": {"finalized_at": None, "marked_uncollectible_at": None,
                               "paid_at": None, "voided_at": None},
        "subtotal": total, "subtotal_excluding_tax": total, "test_clock": cus.get("test_clock"),
        "total": total, "total_discount_amounts": [], "total_excluding_tax": total,
        "total_pretax_credit_amounts": [], "total_taxes": [], "webhooks_delivered_at": None,
        "account_tax_ids": None, "application": None, "automatically_finalizes_at": None,
        "custom_fields": None, "customer_account": None, "customer_address": None,
        "customer_phone": cus.get("phone"), "customer_shipping": None,
        "customer_tax_exempt": "none", "customer_tax_ids": [], "default_source": None,
        "default_tax_rates": [], "ending_balance": 0, "footer": None, "from_invoice": None,
        "on_behalf_of": None,
        "payment_settings": {"default_mandate": None, "payment_method_options": None,
                             "payment_method_types": None},
        "post_payment_credit_notes_amount": 0, "pre_payment_credit_notes_amount": 0,
        "rendering": None, "shipping_cost": None, "shipping_details": None,
        "_payment_intent": None,
    }
    planned = sub.get("discounts") if discount_ids is None else discount_ids
    discounts.apply(store, inv, discounts.current(store, planned, now))
    taxed = sub["automatic_tax"]["enabled"] if automatic_tax is None else automatic_tax
    tax.apply(store, inv, taxed, sub)
    apply_balance(inv, cus.get("balance") or 0)
    return inv


def apply_balance(inv: dict, balance: int) -> None:
    """The customer's ``balance`` (minor units; negative: a credit) on the invoice, as Stripe applies it
    (https://docs.stripe.com/billing/customer/balance): a credit lowers ``amount_due``, and a negative total
    is not paid out but left as credit in ``ending_balance``, which the next invoice uses."""
    applied = inv["total"] + balance
    inv.update(starting_balance=balance, ending_balance=min(0, applied), amount_due=max(0, applied),
               amount_remaining=max(0, applied))


def payment_intent(store: Store, inv: dict) -> dict:
    pi_id = new_id("pi_")
    return {
        "id": pi_id, "object": "payment_intent", "amount": inv["amount_due"],
        "amount_capturable": 0, "amount_details": {"tip": {}}, "amount_received": 0,
        "application": None, "application_fee_amount": None,
        "automatic_payment_methods": None, "canceled_at": None, "cancellation_reason": None,
        "capture_method": "automatic", "client_secret": f"{pi_id}_secret_{new_id('', 25)}",
        "confirmation_method": "automatic", "created": store.now(),
        "currency": inv["currency"], "customer": inv["customer"],
        "description": "Subscription creation", "last_payment_error": None,
        "latest_charge": None, "livemode": False, "metadata": {}, "next_action": None,
        "on_behalf_of": None, "payment_method": None, "payment_method_options": {},
        "payment_method_types": ["card"], "processing": None, "receipt_email": None,
        "review": None, "setup_future_usage": "off_session", "shipping": None,
        "statement_descriptor": None, "statement_descriptor_suffix": None,
        "status": "requires_payment_method", "transfer_data": None, "transfer_group": None,
        "customer_account": None, "excluded_payment_method_types": None,
        "managed_payments": None, "payment_method_configuration_details": None,
        "source": None, "_invoice": inv["id"],
    }
