"""An ``automatic_tax`` stand-in: Stripe's rules for locating the customer, a small table of rates.

Stripe Tax computes real rates (product tax codes, registrations, reverse charge, thresholds); that
is not ours to emulate. This keeps what a client can see:

- **Where the customer is** (https://docs.stripe.com/tax/customer-locations, "Which customer address
  we use"): the first of the customer's ``shipping`` address, its ``address``, then the paying
  payment method's billing details, whose missing country is the card's (``card.country``, "the
  country code of the credit card issuer"). A present address that cannot be used is not skipped.
  An address locates only with a valid ISO 3166-1 country, and for the US or Canada a postal code
  ("We can't calculate tax for US customers with only an ISO country code").
- **No location**: a preview answers ``automatic_tax.status=requires_location_inputs`` and no tax;
  a subscription's invoice still finalizes, untaxed, and Stripe turns automatic tax off
  ("Invoice finalization errors"): ``automatic_tax[enabled]=false`` with ``disabled_reason``
  ``finalization_requires_location_inputs`` on the invoice, ``requires_location_inputs`` on the
  subscription.
- **``tax[validate_location]=immediately``** on a customer create or update refuses an address that
  cannot locate it, 400 ``customer_tax_location_invalid``.
- **The amount**: exclusive, on the invoice's total after discounts, rounded to minor units, added to
  ``total`` and ``amount_due``; ``subtotal`` stays what the lines add up to. A located country not in
  the table is taxed nothing (``complete``): the account is not registered there.
"""

from __future__ import annotations

import functools
import typing

from stripe.params.checkout._session_create_params import SessionCreateParamsShippingAddressCollection

from ..core.store import Store, StripeError, new_id

# Standard rates, percent (the VAT/GST a consumer pays; US sales tax is left at 0: it is per state).
RATES = {"AT": 20.0, "AU": 10.0, "BE": 21.0, "CH": 8.1, "DE": 19.0, "ES": 21.0, "FR": 20.0, "GB": 20.0,
         "IE": 23.0, "IT": 22.0, "NL": 21.0, "SE": 25.0, "US": 0.0}
# Countries where a country alone does not locate a customer (https://docs.stripe.com/tax/customer-locations).
NEEDS_POSTAL_CODE = ("US", "CA")


@functools.cache
def countries() -> frozenset[str]:
    """ISO 3166-1 alpha-2 codes as Stripe lists them (the SDK's ``allowed_countries`` literal)."""
    hint = typing.get_type_hints(SessionCreateParamsShippingAddressCollection)["allowed_countries"]
    found: set[str] = set()
    stack = [hint]
    while stack:
        node = stack.pop()
        if typing.get_origin(node) is typing.Literal:
            found.update(arg for arg in typing.get_args(node) if isinstance(arg, str))
        else:
            stack.extend(typing.get_args(node))
    return frozenset(found - {"ZZ"})  # Stripe lists ZZ for "unknown", which locates nobody


def locates(address: dict | None) -> bool:
    """Whether ``address`` is precise enough for Stripe Tax: a known country, and a postal code where needed."""
    country = ((address or {}).get("country") or "").upper()
    return country in countries() and (country not in NEEDS_POSTAL_CODE or bool(address.get("postal_code")))


def _present(address: dict | None) -> bool:
    return any((address or {}).values())


def location(store: Store, cus: dict, pm: dict | None) -> dict | None:
    """The address Stripe Tax uses for ``cus`` paying with ``pm``, or ``None`` when it cannot locate them."""
    for address in ((cus.get("shipping") or {}).get("address"), cus.get("address")):
        if _present(address):
            return address if locates(address) else None
    if pm is None:
        return None
    billing = dict((pm.get("billing_details") or {}).get("address") or {})
    billing["country"] = billing.get("country") or (pm.get("card") or {}).get("country")
    return billing if locates(billing) else None


def validate_location(params: dict, cus: dict) -> None:
    """``tax[validate_location]=immediately``: refuse a customer create or update when ``cus`` (the customer as
    the request leaves it) has no address that locates it (the first present one must)."""
    if (params.get("tax") or {}).get("validate_location") != "immediately":
        return
    candidates = (("shipping", (cus.get("shipping") or {}).get("address")), ("address", cus.get("address")))
    name, address = next(((n, a) for n, a in candidates if _present(a)), ("address", None))
    if address is not None and locates(address):
        return
    raise StripeError(400, "The customer's location isn't recognized. Provide a valid address with a country "
                      "and, in the US and Canada, a postal code.", code="customer_tax_location_invalid", param=name)


def _paying_pm(store: Store, sub: dict, cus: dict) -> dict | None:
    pm_id = sub.get("default_payment_method") or cus["invoice_settings"]["default_payment_method"]
    return store.payment_methods.get(pm_id or "")


def apply(store: Store, inv: dict, enabled: bool, sub: dict) -> None:
    """Add the stand-in's tax to the draft invoice ``inv`` of ``sub`` when ``automatic_tax`` is ``enabled``;
    a customer it cannot locate leaves ``automatic_tax.status=requires_location_inputs`` and no tax."""
    if not enabled:
        return
    cus = store.customers.get(inv["customer"]) or {}
    address = location(store, cus, _paying_pm(store, sub, cus)) if cus else None
    if address is None:
        inv["automatic_tax"] = {"enabled": True, "disabled_reason": None, "liability": {"type": "self"},
                                "status": "requires_location_inputs"}
        return
    country = address["country"].upper()
    base = max(0, inv["total"])
    amount = round(base * RATES.get(country, 0.0) / 100)
    inv["automatic_tax"] = {"enabled": True, "disabled_reason": None, "liability": {"type": "self"},
                            "status": "complete"}
    inv["customer_address"] = {key: address.get(key) for key in
                               ("city", "country", "line1", "line2", "postal_code", "state")}
    inv["total_taxes"] = [{"amount": amount, "tax_behavior": "exclusive",
                           "taxability_reason": "standard_rated" if country in RATES else "not_collecting",
                           "taxable_amount": base, "type": "tax_rate_details",
                           "tax_rate_details": {"tax_rate": new_id("txr_")}}]
    inv["total"] += amount
    inv["amount_due"] = max(0, inv["total"])
    inv["amount_remaining"] = inv["amount_due"]


def finalize_without_location(inv: dict, sub: dict) -> None:
    """A subscription's invoice whose customer cannot be located finalizes untaxed, and Stripe turns automatic
    tax off on both (https://docs.stripe.com/tax/customer-locations, "Invoice finalization errors")."""
    if inv["automatic_tax"].get("status") != "requires_location_inputs":
        return
    inv["automatic_tax"] = {"enabled": False, "disabled_reason": "finalization_requires_location_inputs",
                            "liability": None, "status": None}
    sub["automatic_tax"].update(enabled=False, disabled_reason="requires_location_inputs")
