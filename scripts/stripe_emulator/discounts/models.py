"""Coupons (https://docs.stripe.com/api/coupons), promotion codes in the shape of API 2025-09-30 and
later (``promotion={"type": "coupon", "coupon": ...}``), and the discounts a subscription gets from them."""

from __future__ import annotations

from ..billing import periods
from ..core.store import Store, StripeError, new_id


def create_coupon(store: Store, params: dict) -> dict:
    percent, amount = params.get("percent_off"), params.get("amount_off")
    if (percent is None) == (amount is None):
        raise StripeError(400, "You must pass exactly one of percent_off or amount_off.", param="percent_off")
    if amount is not None and not params.get("currency"):
        raise StripeError(400, "You must pass currency when passing amount_off.", param="currency")
    duration = params.get("duration") or "once"
    if duration == "repeating" and not params.get("duration_in_months"):
        raise StripeError(400, "You must pass duration_in_months when duration is repeating.",
                          param="duration_in_months")
    coupon_id = params.get("id") or new_id("", 8)
    if coupon_id in store.coupons:
        raise StripeError(400, "Coupon already exists.", code="resource_already_exists", param="id")
    coupon = {
        "id": coupon_id, "object": "coupon", "amount_off": amount,
        "applies_to": {"products": list(params["applies_to"].get("products") or [])}
        if params.get("applies_to") else None,
        "created": store.now(), "currency": (params.get("currency") or "").lower() or None,
        "duration": duration,
        "duration_in_months": params.get("duration_in_months") if duration == "repeating" else None,
        "livemode": False, "max_redemptions": params.get("max_redemptions"),
        "metadata": dict(params.get("metadata") or {}), "name": params.get("name"),
        "percent_off": percent, "redeem_by": params.get("redeem_by"), "times_redeemed": 0, "valid": True,
    }
    store.coupons[coupon_id] = coupon
    store.emit("coupon.created", coupon)
    return coupon


def create_promotion_code(store: Store, params: dict) -> dict:
    promotion = params["promotion"]
    coupon = store.get("coupons", promotion.get("coupon"), "promotion[coupon]")
    code = params.get("code") or new_id("", 8).upper()
    if any(p["code"].lower() == code.lower() and p["active"] for p in store.promotion_codes.values()):
        raise StripeError(400, "An active promotion code with `code` already exists.", param="code")
    restrictions = params.get("restrictions") or {}
    promo = {
        "id": new_id("promo_"), "object": "promotion_code", "active": params.get("active", True),
        "code": code, "created": store.now(), "customer": params.get("customer"), "customer_account": None,
        "expires_at": params.get("expires_at"), "livemode": False,
        "max_redemptions": params.get("max_redemptions"), "metadata": dict(params.get("metadata") or {}),
        "promotion": {"coupon": coupon["id"], "type": "coupon"},
        "restrictions": {"currency_options": {}, "first_time_transaction": bool(
            restrictions.get("first_time_transaction")), "minimum_amount": restrictions.get("minimum_amount"),
            "minimum_amount_currency": restrictions.get("minimum_amount_currency")},
        "times_redeemed": 0,
    }
    store.promotion_codes[promo["id"]] = promo
    store.emit("promotion_code.created", promo)
    return promo


def update_promotion_code(store: Store, promo: dict, params: dict) -> dict:
    before = dict(promo)
    if "active" in params:
        promo["active"] = params["active"]
    if "metadata" in params:
        promo["metadata"] = dict(params["metadata"] or {})
    store.emit("promotion_code.updated", promo, before)
    return promo


def redeemable(store: Store, promo: dict, customer_id: str | None, param: str,
               order: tuple[int, str] | None = None) -> dict:
    """The coupon of ``promo`` if the customer may redeem it now for ``order`` (``(amount, currency)`` in
    minor units, before discounts), else Stripe's 400.

    The code's own limits, then its ``restrictions`` (https://docs.stripe.com/api/promotion_codes/object
    #promotion_code_object-restrictions): ``first_time_transaction`` -- only "Customers without any
    successful payments or invoices"; ``minimum_amount`` -- "a purchase must be $100 or more to work";
    then the coupon's ``max_redemptions`` and ``redeem_by`` (https://docs.stripe.com/api/coupons/object:
    past either, the coupon is no longer ``valid``).
    """
    coupon = store.coupons[promo["promotion"]["coupon"]]
    now = store.now()
    usable = (promo["active"] and coupon["valid"]
              and (promo["expires_at"] is None or promo["expires_at"] > now)
              and (promo["max_redemptions"] is None or promo["times_redeemed"] < promo["max_redemptions"])
              and (promo["customer"] is None or promo["customer"] == customer_id)
              and (coupon["max_redemptions"] is None or coupon["times_redeemed"] < coupon["max_redemptions"])
              and (coupon["redeem_by"] is None or coupon["redeem_by"] > now))
    if not usable:
        raise StripeError(400, f"This promotion code cannot be redeemed: '{promo['code']}'.", param=param)
    restrictions = promo["restrictions"]
    if restrictions["first_time_transaction"] and any(
            inv["customer"] == customer_id and inv["status"] == "paid" for inv in store.invoices.values()):
        raise StripeError(400, "This promotion code cannot be redeemed because the associated customer "
                          "has prior transactions.", param=param)
    minimum = restrictions["minimum_amount"]
    if minimum is not None and order is not None and (
            order[0] < minimum or order[1] != restrictions["minimum_amount_currency"]):
        raise StripeError(400, f"This promotion code cannot be redeemed because the order amount is below its "
                          f"minimum of {minimum} {restrictions['minimum_amount_currency']}.", param=param)
    return coupon


def order_of(sub: dict, planned: list | None = None) -> tuple[int, str]:
    """``(amount, currency)`` of one period of ``sub``'s items, with ``planned`` ``(item, price, quantity)``
    changes in place of the items they change: the purchase a promotion code's ``minimum_amount`` is held to."""
    changed = {item["id"]: (price, quantity) for item, price, quantity in planned or ()}
    amount = 0
    for item in sub["items"]["data"]:
        if "quantity" not in item:
            continue  # metered: its usage is not known ahead
        price, quantity = changed.get(item["id"], (item["price"], item["quantity"]))
        amount += (price["unit_amount"] or 0) * quantity
    return amount, sub["currency"]


def entry_terms(store: Store, entry: dict, customer_id: str, param: str,
                order: tuple[int, str] | None = None) -> tuple[dict | None, dict]:
    """``(promotion code or None, coupon)`` of a ``discounts[]`` entry (``coupon`` or ``promotion_code``) the
    customer may redeem now for ``order``, else Stripe's 400 naming ``param``'s field."""
    if entry.get("promotion_code"):
        promo = store.get("promotion_codes", entry["promotion_code"], f"{param}[promotion_code]")
        return promo, redeemable(store, promo, customer_id, f"{param}[promotion_code]", order)
    return None, store.get("coupons", entry.get("coupon"), f"{param}[coupon]")


def discount_for(store: Store, entry: dict, customer_id: str, sub_id: str | None, param: str,
                 order: tuple[int, str] | None = None) -> dict:
    """A new discount from a ``discounts[]`` entry (``coupon`` or ``promotion_code``), redeemed now for ``order``."""
    promo, coupon = entry_terms(store, entry, customer_id, param, order)
    now = store.now()
    end = periods.add_interval(now, "month", coupon["duration_in_months"]) \
        if coupon["duration"] == "repeating" else None
    return {"id": new_id("di_"), "object": "discount", "checkout_session": None, "customer": customer_id,
            "customer_account": None, "end": end, "invoice": None, "invoice_item": None,
            "promotion_code": promo["id"] if promo else None,
            "source": {"coupon": coupon["id"], "type": "coupon"}, "start": now, "subscription": sub_id,
            "subscription_item": None, "_promotion_code": promo}


def apply_discounts(store: Store, sub: dict, entries: list, param: str = "discounts",
                    order: tuple[int, str] | None = None) -> None:
    """Replace the subscription's discounts with ``entries`` (Stripe's ``discounts`` parameter; ``""`` clears),
    redeemed for ``order`` (default: one period of the subscription's items). Refused, nothing changes."""
    order = order or order_of(sub)
    made = [discount_for(store, entry, sub["customer"], sub["id"], f"{param}[{i}]", order)
            for i, entry in enumerate(entries or [])]
    for discount in made:
        promo = discount.pop("_promotion_code")
        if promo is not None:
            promo["times_redeemed"] += 1
        coupon = store.coupons[discount["source"]["coupon"]]
        coupon["times_redeemed"] += 1
        if coupon["max_redemptions"] is not None and coupon["times_redeemed"] >= coupon["max_redemptions"]:
            coupon["valid"] = False
        store.discounts[discount["id"]] = discount
    sub["discounts"] = [discount["id"] for discount in made]


def planned_discounts(store: Store, sub: dict, entries) -> list:
    """The discounts a preview's ``discounts`` would give (nothing stored; absent: the subscription's)."""
    if entries is None:
        return sub.get("discounts") or []
    planned = []
    for i, entry in enumerate(entries or []):
        discount = discount_for(store, entry, sub["customer"], sub["id"], f"discounts[{i}]", order_of(sub))
        discount.pop("_promotion_code")
        planned.append(discount)
    return planned
