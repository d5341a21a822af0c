"""``billing_mode``: how a subscription's credit prorations are computed, and migrating it to ``flexible``.

Since 2025-09-30.clover a subscription created without ``billing_mode`` is ``flexible``
(https://docs.stripe.com/changelog/clover/2025-09-30/billing-mode-default-flexible); ``classic`` stays for
those created with it. The difference modelled here is the credit of a downgrade or a cancellation
(https://docs.stripe.com/billing/subscriptions/billing-mode/compare, "Credit proration calculations";
https://docs.stripe.com/billing/subscriptions/prorations#credit-prorations):

- ``classic`` credits the unused time at the item's current price, quantity and last discount, whatever
  was debited (a seat bought under a 100%-off code is credited at full price): ``prorations._unused_lines``.
- ``flexible`` "calculates credit prorations based on the original amount previously debited": one credit
  per debit of the item in the current period (the period's line, each proration charge), each the unused
  share of what that debit actually took (its amount less its share of the invoice's discount), less what
  earlier credits already gave back from it; never above the debit, none without one. Each credit names
  its debit in ``proration_details.credited_items`` ("For a credit proration line_item, the original debit
  line_items to which the credit proration applies",
  https://docs.stripe.com/api/invoices/line_item#invoice_line_item_object-parent-subscription_item_details-proration_details).

``POST /v1/subscriptions/{id}/migrate`` with ``billing_mode[type]=flexible`` moves a ``classic`` subscription
to ``flexible`` (https://docs.stripe.com/api/subscriptions/migrate); "You can't migrate a subscription from
flexible billing mode to classic billing mode" (https://docs.stripe.com/billing/subscriptions/billing-mode).
The periods and the billing cycle anchor are kept: only how later prorations are computed changes.
"""

from __future__ import annotations

from ..billing import periods
from ..billing.objects import invoice_line
from ..core.store import Store, StripeError, public

MODES = ("classic", "flexible")


def mode_object(mode: str, now: int) -> dict:
    """The subscription's ``billing_mode`` as the pinned API version shows it (``flexible`` only set in flexible
    mode, its ``proration_discounts`` the default ``included``)."""
    flexible = {"proration_discounts": "included"} if mode == "flexible" else None
    return {"flexible": flexible, "type": mode, "updated_at": now}


def is_flexible(sub: dict) -> bool:
    return sub["billing_mode"]["type"] == "flexible"


def migrate(store: Store, sub: dict, params: dict) -> dict:
    """Move the ``classic`` ``sub`` to ``flexible``; 400 for another target, an ended or a flexible subscription."""
    target = (params.get("billing_mode") or {}).get("type")
    if target != "flexible":
        raise StripeError(400, "Invalid billing_mode[type]: must be flexible.", param="billing_mode[type]")
    if sub["status"] in ("canceled", "incomplete_expired"):
        raise StripeError(400, f"Subscription {sub['id']} is {sub['status']} and cannot be migrated.")
    if is_flexible(sub):
        raise StripeError(400, "This subscription is already in flexible billing mode.", param="billing_mode[type]")
    before = public(sub)
    sub["billing_mode"] = mode_object("flexible", store.now())
    store.emit("customer.subscription.updated", sub, before)
    return sub


def _item_lines(store: Store, sub: dict, item_id: str) -> list[tuple[dict | None, dict]]:
    """``(invoice or None, line)`` for every line of ``item_id``: on the subscription's invoices (drafts and void
    ones aside: nothing was debited by them) and among its prorations waiting for the next invoice."""
    found = [(inv, line) for inv in store.invoices.values()
             if inv["parent"]["subscription_details"]["subscription"] == sub["id"]
             and inv["status"] in ("open", "paid", "uncollectible") for line in inv["lines"]["data"]]
    found += [(None, line) for line in sub.get("_pending_prorations") or []]
    return [(inv, line) for inv, line in found
            if line["parent"]["subscription_item_details"]["subscription_item"] == item_id]


def _debited(inv: dict | None, line: dict) -> int:
    """What ``line`` actually took: its amount less its share of the invoice's discount (a proration carries its
    own inside its amount and is not ``discountable``)."""
    if inv is None or not line["discountable"] or not inv["total_discount_amounts"]:
        return line["amount"]
    base = sum(other["amount"] for other in inv["lines"]["data"] if other["discountable"] and other["amount"] > 0)
    off = sum(entry["amount"] for entry in inv["total_discount_amounts"])
    return line["amount"] - round(off * line["amount"] / base) if base else line["amount"]


def _credited(lines: list[tuple[dict | None, dict]], debit_id: str) -> int:
    """What earlier credits gave back from the debit line ``debit_id`` (minor units, positive)."""
    return -sum(line["amount"] for _, line in lines
                if debit_id in ((line["parent"]["subscription_item_details"]["proration_details"]
                                 .get("credited_items") or {}).get("invoice_line_items") or ()))


def credit_lines(store: Store, sub: dict, item: dict, when: int, description: str) -> list[dict]:
    """The credits of ``item``'s unused time after ``when`` in flexible mode (see above), one per debit."""
    start, end = periods.period_start(sub), periods.period_end(sub)
    lines = _item_lines(store, sub, item["id"])
    credits = []
    for inv, debit in lines:
        d_start, d_end = debit["period"]["start"], debit["period"]["end"]
        if debit["amount"] <= 0 or d_end <= max(start, when) or d_start >= end:
            continue
        share = (d_end - max(when, d_start)) / (d_end - d_start)
        credit = round(_debited(inv, debit) * share) - _credited(lines, debit["id"])
        if credit <= 0:
            continue
        line = invoice_line(sub["id"], item["id"], item["price"], item["quantity"], -credit, when, d_end,
                            description, proration=True)
        line["parent"]["subscription_item_details"]["proration_details"]["credited_items"] = {
            "invoice": inv["id"] if inv is not None else None, "invoice_line_items": [debit["id"]]}
        credits.append(line)
    return credits
