"""An ``automatic_tax`` stand-in: a small table of rates by the customer's country.

Stripe Tax computes real rates (product tax codes, registrations, reverse charge, thresholds); that
is not ours to emulate. This only has to make an invoice's totals add up the way Stripe's do:
tax is exclusive, computed on the invoice's total after discounts, rounded to minor units, and
added to ``total`` and ``amount_due``; ``subtotal`` stays what the lines add up to. A customer
without an address, or in a country not in the table, is taxed nothing (``automatic_tax.status``
``requires_location_inputs``, as Stripe says when it cannot locate the customer).
"""

from __future__ import annotations

from ..core.store import Store, new_id

# Standard rates, percent (the VAT/GST a consumer pays; US sales tax is left at 0: it is per state).
RATES = {"AT": 20.0, "AU": 10.0, "BE": 21.0, "CH": 8.1, "DE": 19.0, "ES": 21.0, "FR": 20.0, "GB": 20.0,
         "IE": 23.0, "IT": 22.0, "NL": 21.0, "SE": 25.0, "US": 0.0}


def apply(store: Store, inv: dict, enabled: bool) -> None:
    """Add the stand-in's tax to the draft invoice ``inv`` when ``automatic_tax`` is ``enabled``."""
    if not enabled:
        return
    cus = store.customers.get(inv["customer"]) or {}
    country = ((cus.get("address") or {}).get("country") or "").upper()
    if country not in RATES:
        inv["automatic_tax"] = {"enabled": True, "liability": {"type": "self"}, "status": "requires_location_inputs"}
        return
    base = max(0, inv["total"])
    amount = round(base * RATES[country] / 100)
    inv["automatic_tax"] = {"enabled": True, "liability": {"type": "self"}, "status": "complete"}
    inv["customer_address"] = dict(cus["address"])
    inv["total_taxes"] = [{"amount": amount, "tax_behavior": "exclusive", "taxability_reason": "standard_rated",
                           "taxable_amount": base, "type": "tax_rate_details",
                           "tax_rate_details": {"tax_rate": new_id("txr_")}}]
    inv["total"] += amount
    inv["amount_due"] = max(0, inv["total"])
    inv["amount_remaining"] = inv["amount_due"]
