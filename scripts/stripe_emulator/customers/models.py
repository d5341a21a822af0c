"""Customers: the object, a live (not deleted) customer, and an update as Stripe applies it."""

from __future__ import annotations

import re

from ..billing import tax
from ..core.store import Store, StripeError, merge_metadata, new_id, public
from . import payment_methods


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
        "preferred_locales": [], "shipping": None, "tax_exempt": "none",
        "test_clock": params.get("test_clock"),
    }


def live_customer(st, cus_id, param="id"):
    cus = st.get("customers", cus_id, param)
    if cus.get("_deleted"):
        raise StripeError(404, f"No such customer: '{cus_id}'", code="resource_missing",
                          param=param)
    return cus


ADDRESS_FIELDS = ("city", "country", "line1", "line2", "postal_code", "state")


def _address(value) -> dict | None:
    return {key: (value or {}).get(key) or None for key in ADDRESS_FIELDS} if value else None


def _shipping(value) -> dict | None:
    return {"address": _address(value["address"]), "name": value["name"],
            "phone": value.get("phone") or None} if value else None


# One address: something, "@", a domain, no spaces. Stripe refuses others with ``email_invalid``
# ("The email address is invalid (e.g., not properly formatted)", https://docs.stripe.com/error-codes#email-invalid).
EMAIL = re.compile(r"[^@\s]+@[^@\s.][^@\s]*")


def apply_details(cus: dict, params: dict) -> None:
    """The contact and tax details a create or update sets (``""`` unsets one), once the email is an address
    and ``tax[validate_location]=immediately`` accepted the address they leave (``billing/tax.py``)."""
    if params.get("email") and not EMAIL.fullmatch(params["email"]):
        raise StripeError(400, f"Invalid email address: {params['email']}", code="email_invalid", param="email")
    located = {"address": _address(params["address"]) if "address" in params else cus["address"],
               "shipping": _shipping(params["shipping"]) if "shipping" in params else cus["shipping"]}
    tax.validate_location(params, located)
    cus.update(located)
    for key in ("email", "name", "description", "phone"):
        if key in params:
            cus[key] = params[key] or None
    if "metadata" in params:
        merge_metadata(cus, params["metadata"])
    if "tax_exempt" in params:
        cus["tax_exempt"] = params["tax_exempt"] or "none"
    if "preferred_locales" in params:
        cus["preferred_locales"] = list(params["preferred_locales"] or [])


def update(st, cus, params):
    before = public(cus)
    apply_details(cus, params)
    settings = params.get("invoice_settings") or {}
    if "default_payment_method" in settings:
        pm_id = settings["default_payment_method"]
        cus["invoice_settings"]["default_payment_method"] = payment_methods.customer_pm(
            st, cus["id"], pm_id, "invoice_settings[default_payment_method]") if pm_id else None
    st.emit("customer.updated", cus, before)
