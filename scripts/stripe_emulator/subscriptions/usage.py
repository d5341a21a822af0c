"""A metered item's charge: its meter's aggregated usage for a period, billed in arrears.

A metered price (``recurring.usage_type=metered`` with a ``meter``) is billed at the end of each
period for what its meter counted for the customer in it (events timestamped in ``[start, end)``),
as the quantity of its line times the price's ``unit_amount``
(https://docs.stripe.com/billing/subscriptions/usage-based/how-it-works). The subscriptions here are
``billing_mode=classic``: an item added mid-period bills only the usage after it was added, and a
removed item's usage is not billed (https://docs.stripe.com/billing/subscriptions/usage-based/manage-billing-setup,
"Update prices mid-cycle"), so each item counts from ``_billed_from``, the time it was added. Usage
during a trial is never billed: "During the trial period, any usage accrued doesn't count toward the
total charged to the customer at the end of the billing cycle. After the trial period ends, usage
accrues and is billed at the end of the next billing cycle"
(https://docs.stripe.com/billing/subscriptions/usage-based/pricing-models, "Free trials"), so each
item counts from ``trial_end`` too, and the invoice that ends a trial has no usage line.
"""

from __future__ import annotations

from ..billing.objects import invoice_line
from ..core.store import Store
from ..meters.models import aggregate


def usage_lines(store: Store, sub: dict, start: int, end: int) -> list[dict]:
    """One line per metered item of ``sub``: its usage in ``[start, end)`` at its price, none for an item
    whose billed time is empty there (a trial's)."""
    lines = []
    for item in sub["items"]["data"]:
        meter = store.meters.get((item["price"]["recurring"] or {}).get("meter") or "")
        billed_from = max(start, item.get("_billed_from", start), sub.get("trial_end") or start)
        if "quantity" in item or meter is None or billed_from >= end:
            continue
        # A period whose corrections take it below zero bills nothing, never a credit (Stripe reports it as 0,
        # https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage-api).
        value = max(0, aggregate(store, meter, sub["customer"], billed_from, end))
        price = item["price"]
        described = f"{value:g} × {meter['display_name']} (at {price['unit_amount']} per unit)"
        lines.append(invoice_line(sub["id"], item["id"], price, round(value), round(value * price["unit_amount"]),
                                  start, end, described))
    return lines
