"""Builders for Stripe objects in the 2026-10-28 API shape.

Field names follow the examples in stripe/openapi ``fixtures3.json``. Objects are
stored unexpanded (references are id strings; ``expand.render`` makes the public copy).
Keys starting with ``_`` are emulator bookkeeping and never leave the emulator.
"""

from __future__ import annotations

import calendar
import datetime as dt

from .state import Store, new_id, public

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
}

# Card numbers ``POST /v1/payment_methods`` accepts (Stripe's test numbers) -> the test id they act as.
TEST_CARD_NUMBERS = {
    "4242424242424242": "pm_card_visa",
    "5555555555554444": "pm_card_mastercard",
    "378282246310005": "pm_card_amex",
    "4000000000000002": "pm_card_chargeDeclined",
    "4000002500003155": "pm_card_authenticationRequired",
    "4000000000000341": "pm_card_chargeCustomerFail",
}

def list_object(data: list, url: str, has_more: bool = False) -> dict:
    return {"object": "list", "data": data, "has_more": has_more, "url": url}


def add_interval(ts: int, interval: str, count: int = 1) -> int:
    """Advance a timestamp by a price's recurring interval (calendar months, clamped)."""
    if interval == "day":
        return ts + 86400 * count
    if interval == "week":
        return ts + 7 * 86400 * count
    months = count * (12 if interval == "year" else 1)
    d = dt.datetime.fromtimestamp(ts, dt.UTC)
    year, month = divmod(d.month - 1 + months, 12)
    year, month = d.year + year, month + 1
    day = min(d.day, calendar.monthrange(year, month)[1])
    return int(d.replace(year=year, month=month, day=day).timestamp())


def product(store: Store, params: dict) -> dict:
    now = store.now()
    return {
        "id": params.get("id") or new_id("prod_", 14), "object": "product", "active": True,
        "created": now, "default_price": None, "description": params.get("description"),
        "images": [], "livemode": False, "marketing_features": [],
        "metadata": dict(params.get("metadata") or {}), "name": params["name"],
        "package_dimensions": None, "shippable": None, "statement_descriptor": None,
        "tax_code": None, "type": "service", "unit_label": None, "updated": now, "url": None,
    }


def price(store: Store, params: dict, product_id: str) -> dict:
    recurring = params.get("recurring")
    amount = int(params["unit_amount"])
    rec = None
    if recurring:
        rec = {"interval": recurring.get("interval", "month"),
               "interval_count": int(recurring.get("interval_count") or 1),
               "meter": None, "trial_period_days": None, "usage_type": "licensed"}
    return {
        "id": new_id("price_"), "object": "price", "active": True, "billing_scheme": "per_unit",
        "created": store.now(), "currency": params["currency"].lower(),
        "custom_unit_amount": None, "livemode": False, "lookup_key": params.get("lookup_key"),
        "metadata": dict(params.get("metadata") or {}), "nickname": params.get("nickname"),
        "product": product_id, "recurring": rec, "tax_behavior": "unspecified",
        "tiers_mode": None, "transform_quantity": None,
        "type": "recurring" if rec else "one_time",
        "unit_amount": amount, "unit_amount_decimal": str(amount),
    }


def legacy_plan(p: dict) -> dict:
    """The ``plan`` view of a price, still present on subscription items."""
    rec = p["recurring"] or {}
    return {
        "id": p["id"], "object": "plan", "active": p["active"], "amount": p["unit_amount"],
        "amount_decimal": p["unit_amount_decimal"], "billing_scheme": "per_unit",
        "created": p["created"], "currency": p["currency"], "interval": rec.get("interval"),
        "interval_count": rec.get("interval_count"), "livemode": False,
        "metadata": p["metadata"], "meter": None, "nickname": p["nickname"],
        "product": p["product"], "tiers_mode": None, "transform_usage": None,
        "trial_period_days": None, "usage_type": "licensed",
    }


def customer(store: Store, params: dict) -> dict:
    return {
        "id": new_id("cus_", 14), "object": "customer", "address": None, "balance": 0,
        "created": store.now(), "currency": None, "default_source": None,
        "delinquent": False, "description": params.get("description"), "discount": None,
        "email": params.get("email"), "invoice_prefix": new_id("", 8).upper(),
        "invoice_settings": {"custom_fields": None, "default_payment_method": None,
                             "footer": None, "rendering_options": None},
        "livemode": False, "metadata": dict(params.get("metadata") or {}),
        "name": params.get("name"), "next_invoice_sequence": 1, "phone": params.get("phone"),
        "preferred_locales": [], "shipping": None, "tax_exempt": "none", "test_clock": None,
    }


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
                 "country": "US", "display_brand": card["brand"], "exp_month": exp_month,
                 "exp_year": year, "fingerprint": new_id("", 16), "funding": "credit",
                 "generated_from": None, "last4": card["last4"],
                 "networks": {"available": [card["brand"]], "preferred": None},
                 "regulated_status": "unregulated",
                 "three_d_secure_usage": {"supported": True}, "wallet": None},
        "created": store.now(), "customer": None, "livemode": False, "metadata": {},
        "type": "card", "customer_account": None, "_test_id": test_id,
    }


def subscription_item(store: Store, sub_id: str, p: dict, quantity: int,
                      start: int, end: int) -> dict:
    return {
        "id": new_id("si_", 14), "object": "subscription_item", "billing_thresholds": None,
        "created": store.now(), "current_period_end": end, "current_period_start": start,
        "discounts": [], "metadata": {}, "plan": legacy_plan(p), "price": public(p),
        "quantity": quantity, "subscription": sub_id, "tax_rates": [],
    }


def subscription(store: Store, customer_id: str, params: dict, now: int) -> dict:
    sub_id = new_id("sub_")
    settings = params.get("payment_settings") or {}
    return {
        "id": sub_id, "object": "subscription", "application": None,
        "application_fee_percent": None,
        "automatic_tax": {"disabled_reason": None, "enabled": False, "liability": None},
        "billing_cycle_anchor": now, "billing_cycle_anchor_config": None,
        "billing_mode": {"type": "classic"}, "billing_thresholds": None,
        "cancel_at": None, "cancel_at_period_end": False, "canceled_at": None,
        "cancellation_details": {"comment": None, "feedback": None, "reason": None},
        "collection_method": "charge_automatically", "created": now, "currency": None,
        "customer": customer_id, "customer_account": None, "days_until_due": None,
        "default_payment_method": None, "default_source": None, "default_tax_rates": [],
        "description": params.get("description"), "discounts": [], "ended_at": None,
        "invoice_settings": {"account_tax_ids": None, "issuer": {"type": "self"}},
        "items": list_object([], f"/v1/subscription_items?subscription={sub_id}"),
        "latest_invoice": None, "livemode": False,
        "metadata": dict(params.get("metadata") or {}),
        "next_pending_invoice_item_invoice": None, "on_behalf_of": None,
        "pause_collection": None,
        "payment_settings": {"payment_method_options": None, "payment_method_types": None,
                             "save_default_payment_method":
                                 settings.get("save_default_payment_method", "off")},
        "pending_invoice_item_interval": None, "pending_setup_intent": None,
        "pending_update": None, "schedule": None, "start_date": now, "status": "incomplete",
        "test_clock": None, "transfer_data": None, "trial_end": None,
        "trial_settings": {"end_behavior": {"missing_payment_method": "create_invoice"}},
        "trial_start": None, "billing_schedules": [], "managed_payments": None,
    }


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
    """The lines charging each item of ``sub`` for the period ``start``-``end`` (nothing on a trial)."""
    return [invoice_line(sub["id"], item["id"], item["price"], item["quantity"],
                         0 if free else item["price"]["unit_amount"] * item["quantity"], start, end)
            for item in sub["items"]["data"]]


def invoice(store: Store, sub: dict, billing_reason: str, start: int, end: int,
            lines: list[dict] | None = None) -> dict:
    """A draft invoice of ``sub``: the given ``lines``, else the items' charge for ``start``-``end``."""
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
    return {
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
        "subtotal": total, "subtotal_excluding_tax": total, "test_clock": None,
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


def webhook_endpoint(store: Store, params: dict) -> dict:
    return {
        "id": new_id("we_"), "object": "webhook_endpoint",
        "api_version": params.get("api_version"), "application": None,
        "created": store.now(), "description": params.get("description"),
        "enabled_events": list(params["enabled_events"]), "livemode": False,
        "metadata": dict(params.get("metadata") or {}), "status": "enabled",
        "url": params["url"], "_secret": "whsec_" + new_id("", 32),
    }
