"""What a subscription's discount takes off an invoice (https://docs.stripe.com/billing/subscriptions/coupons).

A discount points at its coupon (``source.coupon``); ``percent_off`` takes that share of the
invoice's discountable lines (rounded to minor units; prorations carry theirs inside their amounts),
``amount_off`` that many minor units of the coupon's currency (never more than those lines).
``duration``: ``once`` applies to one invoice, ``repeating`` until the discount's ``end``, ``forever`` always.
"""

from __future__ import annotations

from ..core.store import Store


def current(store: Store, discount_ids: list | None, now: int) -> dict | None:
    """The first discount of ``discount_ids`` that still applies at ``now``, or ``None``."""
    for ref in discount_ids or ():
        # An id of a stored discount, or a discount a preview plans (not stored).
        discount = store.discounts.get(ref) if isinstance(ref, str) else ref
        if discount is None or discount.get("_used") or (discount["end"] is not None and discount["end"] <= now):
            continue
        return discount
    return None


def amount(store: Store, discount: dict, subtotal: int, currency: str) -> int:
    """Minor units ``discount`` takes off an invoice whose subtotal is ``subtotal`` (0 for a credit)."""
    coupon = store.coupons.get(discount["source"]["coupon"]) or {}
    if subtotal <= 0:
        return 0
    if coupon.get("percent_off") is not None:
        return min(subtotal, round(subtotal * float(coupon["percent_off"]) / 100))
    if coupon.get("amount_off") is not None and coupon.get("currency") == currency:
        return min(subtotal, int(coupon["amount_off"]))
    return 0


def applies(store: Store, discount: dict, product: str) -> bool:
    """Whether ``discount`` covers ``product``: a coupon with ``applies_to.products`` only those ("An array of
    Product IDs that this Coupon will apply to", https://docs.stripe.com/api/coupons/object#coupon_object-applies_to)."""
    restricted = ((store.coupons.get(discount["source"]["coupon"]) or {}).get("applies_to") or {}).get("products")
    return not restricted or product in restricted


def apply(store: Store, inv: dict, discount: dict | None) -> None:
    """Take ``discount`` off the draft invoice ``inv`` (its totals and amounts due), Stripe's fields set.

    Only ``discountable`` lines are discounted: prorations carry their own discount inside their amount
    ("discountable: always false for prorations", https://docs.stripe.com/api/invoices/line_item#invoice_line_item_object-discountable),
    and only those of the products the coupon ``applies`` to.
    """
    if discount is None:
        return
    base = sum(line["amount"] for line in inv["lines"]["data"] if line["discountable"]
               and applies(store, discount, line["pricing"]["price_details"]["product"]))
    off = amount(store, discount, base, inv["currency"])
    if not off:
        return
    inv["discounts"] = [discount["id"]]
    inv["total_discount_amounts"] = [{"amount": off, "discount": discount["id"]}]
    for name in ("total", "total_excluding_tax", "amount_due", "amount_remaining"):
        inv[name] = max(0, inv[name] - off) if name.startswith("amount") else inv[name] - off
