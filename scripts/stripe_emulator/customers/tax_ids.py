"""A customer's tax ids (https://docs.stripe.com/api/tax_ids), with Stripe's format check for a few types.

Stripe checks a value's format when it is added (``tax_id_invalid``) and verifies EU and UK VAT
numbers with the authorities afterwards (``verification.status`` ``pending``, then ``verified``);
here the format is checked for the types below and every other type of Stripe's list is taken as
it is, with its verification ``unavailable``.
"""

from __future__ import annotations

import re

from ..core.store import Store, StripeError, new_id

# type -> (pattern of the value, whose first two letters are the country for eu_vat; the country otherwise)
FORMATS = {
    "eu_vat": (re.compile(r"^(AT U\d{8}|ATU\d{8}|BE[01]\d{9}|DE\d{9}|ES[A-Z0-9]\d{7}[A-Z0-9]|FR[A-Z0-9]{2}\d{9}|"
                          r"IE\d{7}[A-Z]{1,2}|IT\d{11}|NL\d{9}B\d{2}|SE\d{12}|EL\d{9}|PL\d{10}|PT\d{9}|DK\d{8}|"
                          r"FI\d{8}|LU\d{8}|CZ\d{8,10})$"), None),
    "gb_vat": (re.compile(r"^GB(\d{9}|\d{12})$"), "GB"),
    "us_ein": (re.compile(r"^\d{2}-\d{7}$"), "US"),
    "au_abn": (re.compile(r"^\d{11}$"), "AU"),
}
VERIFIED_TYPES = ("eu_vat", "gb_vat")


def create(store: Store, cus: dict, params: dict) -> dict:
    kind, value = params["type"], re.sub(r"\s", "", str(params["value"])).upper()
    pattern, country = FORMATS.get(kind, (None, None))
    if pattern is not None and not pattern.match(value):
        raise StripeError(400, f"Invalid value for {kind}.", code="tax_id_invalid", param="value")
    if kind == "eu_vat":
        country = "GR" if value.startswith("EL") else value[:2]
    tax_id = {
        "id": new_id("txi_"), "object": "tax_id", "country": country, "created": store.now(),
        "customer": cus["id"], "livemode": False, "owner": {"customer": cus["id"], "type": "customer"},
        "type": kind, "value": value,
        "verification": {"status": "pending" if kind in VERIFIED_TYPES else "unavailable",
                         "verified_address": None, "verified_name": None},
    }
    store.tax_ids[tax_id["id"]] = tax_id
    store.emit("customer.tax_id.created", tax_id)
    return tax_id


def of_customer(store: Store, cus: dict, tax_id_id: str) -> dict:
    """The customer's tax id ``tax_id_id``; another customer's is as unknown as a missing one (404)."""
    tax_id = store.tax_ids.get(tax_id_id)
    if tax_id is None or tax_id["customer"] != cus["id"]:
        raise StripeError(404, f"No such tax ID: '{tax_id_id}'", code="resource_missing", param="id")
    return tax_id


def delete(store: Store, tax_id: dict) -> dict:
    del store.tax_ids[tax_id["id"]]
    store.emit("customer.tax_id.deleted", tax_id)
    return {"id": tax_id["id"], "object": "tax_id", "deleted": True}
