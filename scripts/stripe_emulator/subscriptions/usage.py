"""A metered item's charge: its meter's aggregated usage for a period, billed in arrears.

A metered price (``recurring.usage_type=metered`` with a ``meter``) is billed at the end of each
period for what its meter counted for the customer in it (events timestamped in ``[start, end)``),
as the quantity of its line times the price's ``unit_amount``
(https://docs.stripe.com/billing/subscriptions/usage-based/how-it-works). The subscriptions here are
``billing_mode=classic``: an item added mid-period bills only the usage after it was added, and a
removed item's usage is not billed (https://docs.stripe.com/billing/subscriptions/usage-based/manage-billing-setup,
"Update prices mid-cycle"), so each item counts from ``_billed_from``, the time it was added.
"""

from __future__ import annotations

from ..billing.objects import invoice_line
from ..core.store import Store
from ..meters.models import aggregate


def usage_lines(store: Store, sub: dict, start: int, end: int) -> list[dict]:
    """One line per metered item of ``sub``: its usage in ``[start, end)`` at its price."""
    lines = []
    for item in sub["items"]["data"]:
        meter = store.meters.get((item["price"]["recurring"] or {}).get("meter") or "")
        if "quantity" in item or meter is None:
            continue
        value = aggregate(store, meter, sub["customer"], max(start, item.get("_billed_from", start)), end)
        price = item["price"]
        described = f"{value:g} × {meter['display_name']} (at {price['unit_amount']} per unit)"
        lines.append(invoice_line(sub["id"], item["id"], price, round(value), round(value * price["unit_amount"]),
                                  start, end, described))
    return lines
