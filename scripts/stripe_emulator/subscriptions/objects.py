"""Builders of subscriptions and their items in the 2026-10-28 API shape, and finding an item."""

from __future__ import annotations

from ..core.lists import list_object
from ..core.store import Store, StripeError, new_id, public
from ..products.models import legacy_plan, metered
from . import flexible, rules


def subscription_item(store: Store, sub_id: str, p: dict, quantity: int | None,
                      start: int, end: int) -> dict:
    """An item; a metered price's has no ``quantity`` (its usage is what the meter counts)."""
    item = {
        "id": new_id("si_", 14), "object": "subscription_item", "billing_thresholds": None,
        "created": store.now(), "current_period_end": end, "current_period_start": start,
        "discounts": [], "metadata": {}, "plan": legacy_plan(p), "price": public(p),
        "quantity": quantity, "subscription": sub_id, "tax_rates": [],
    }
    if metered(p):
        del item["quantity"]
        item["_billed_from"] = store.now()
    return item


def subscription(store: Store, customer_id: str, params: dict, now: int) -> dict:
    sub_id = new_id("sub_")
    settings = params.get("payment_settings") or {}
    return {
        "id": sub_id, "object": "subscription", "application": None,
        "application_fee_percent": None,
        "automatic_tax": {"disabled_reason": None,
                          "enabled": bool((params.get("automatic_tax") or {}).get("enabled")), "liability": None},
        "billing_cycle_anchor": now, "billing_cycle_anchor_config": None,
        "billing_mode": flexible.mode_object(rules.billing_mode(params.get("billing_mode"), "billing_mode[type]"), now),
        "billing_thresholds": None,
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
        "test_clock": store.clock_of(customer_id), "transfer_data": None, "trial_end": None,
        "trial_settings": {"end_behavior": {"missing_payment_method": "create_invoice"}},
        "trial_start": None, "billing_schedules": [], "managed_payments": None,
    }


def find_item(sub: dict, item_id: str, param: str) -> dict:
    for item in sub["items"]["data"]:
        if item["id"] == item_id:
            return item
    raise StripeError(400, f"No such subscription item: '{item_id}'", code="resource_missing",
                      param=param)
