"""Rendering stored objects for a response, with Stripe's ``expand[]`` semantics.

Stored objects reference others by id; each dotted ``expand`` path replaces an id with
the object (recursively), ``data.`` walks into list objects, and invoice "includable"
fields that Stripe only returns on request are computed here.
"""

from __future__ import annotations

from typing import Any

from .lists import list_object
from .store import Store, StripeError, public

# Invoice fields Stripe only returns when asked for with ``expand[]`` ("includable").
# ``payment_intent`` left the invoice in 2025-03-31; it is tolerated here for old clients.
INVOICE_INCLUDABLE = ("confirmation_secret", "payments", "payment_intent")


def invoice_payments(store: Store, inv: dict) -> dict:
    pi = store.payment_intents.get(inv.get("_payment_intent") or "")
    data = []
    if pi:
        data.append({
            "id": "inpay_" + pi["id"][3:], "object": "invoice_payment",
            "amount_paid": pi["amount_received"] or None, "amount_requested": pi["amount"],
            "created": pi["created"], "currency": pi["currency"], "invoice": inv["id"],
            "is_default": True, "livemode": False,
            "payment": {"type": "payment_intent", "payment_intent": pi["id"]},
            "status": "paid" if pi["status"] == "succeeded" else "open",
            "status_transitions": {"canceled_at": None,
                                   "paid_at": inv["status_transitions"]["paid_at"]},
        })
    return list_object(data, f"/v1/invoice_payments?invoice={inv['id']}")


def render(store: Store, obj: dict, expand: list[str] | None = None) -> dict:
    """Public copy of ``obj`` with each dotted ``expand`` path expanded."""
    out = public(obj)
    for path in expand or []:
        out = _expand(store, out, path.split("."), path)
    return out


def _includable(store: Store, obj: dict, field: str) -> Any:
    inv = store.invoices[obj["id"]]
    pi = store.payment_intents.get(inv.get("_payment_intent") or "")
    if field == "confirmation_secret":
        if pi is None or inv["status"] != "open":
            return None
        return {"client_secret": pi["client_secret"], "type": "payment_intent"}
    if field == "payments":
        return invoice_payments(store, inv)
    return pi["id"] if pi else None


def _expand(store: Store, value: Any, parts: list[str], path: str) -> Any:
    if isinstance(value, list):  # a list of references (``discounts``): each one is expanded
        return [_expand(store, v, parts, path) for v in value]
    if isinstance(value, str):
        target = store.lookup(value)
        value = public(target) if target is not None else value
    if not parts or not isinstance(value, dict):
        return value
    head, rest = parts[0], parts[1:]
    if head == "data" and value.get("object") == "list":
        value["data"] = [_expand(store, v, rest, path) for v in value["data"]]
        return value
    if value.get("object") == "invoice" and head in INVOICE_INCLUDABLE and head not in value:
        value[head] = _includable(store, value, head)
    if head not in value:
        raise StripeError(400, f"This property cannot be expanded ({head}).", param="expand")
    if value[head] is not None:
        value[head] = _expand(store, value[head], rest, path)
    return value
