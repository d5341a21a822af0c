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


def redeemable(store: Store, promo: dict, customer_id: str | None, param: str) -> dict:
    """The coupon of ``promo`` if the customer may redeem it now; Stripe's 400 otherwise."""
    coupon = store.coupons[promo["promotion"]["coupon"]]
    now = store.now()
    usable = (promo["active"] and coupon["valid"]
              and (promo["expires_at"] is None or promo["expires_at"] > now)
              and (promo["max_redemptions"] is None or promo["times_redeemed"] < promo["max_redemptions"])
              and (promo["customer"] is None or promo["customer"] == customer_id))
    if not usable:
        raise StripeError(400, f"This promotion code cannot be redeemed: '{promo['code']}'.", param=param)
    return coupon


def discount_for(store: Store, entry: dict, customer_id: str, sub_id: str | None, param: str) -> dict:
    """A new discount from a ``discounts[]`` entry (``coupon`` or ``promotion_code``), redeemed now."""
    promo = None
    if entry.get("promotion_code"):
        promo = store.get("promotion_codes", entry["promotion_code"], f"{param}[promotion_code]")
        coupon = redeemable(store, promo, customer_id, f"{param}[promotion_code]")
    else:
        coupon = store.get("coupons", entry.get("coupon"), f"{param}[coupon]")
    now = store.now()
    end = periods.add_interval(now, "month", coupon["duration_in_months"]) \
        if coupon["duration"] == "repeating" else None
    return {"id": new_id("di_"), "object": "discount", "checkout_session": None, "customer": customer_id,
            "customer_account": None, "end": end, "invoice": None, "invoice_item": None,
            "promotion_code": promo["id"] if promo else None,
            "source": {"coupon": coupon["id"], "type": "coupon"}, "start": now, "subscription": sub_id,
            "subscription_item": None, "_promotion_code": promo}


def apply_discounts(store: Store, sub: dict, entries: list, param: str = "discounts") -> None:
    """Replace the subscription's discounts with ``entries`` (Stripe's ``discounts`` parameter; ``""`` clears)."""
    made = [discount_for(store, entry, sub["customer"], sub["id"], f"{param}[{i}]")
            for i, entry in enumerate(entries or [])]
    for discount in made:
        promo = discount.pop("_promotion_code")
        if promo is not None:
            promo["times_redeemed"] += 1
        store.coupons[discount["source"]["coupon"]]["times_redeemed"] += 1
        store.discounts[discount["id"]] = discount
    sub["discounts"] = [discount["id"] for discount in made]


def planned_discounts(store: Store, sub: dict, entries) -> list:
    """The discounts a preview's ``discounts`` would give (nothing stored; absent: the subscription's)."""
    if entries is None:
        return sub.get("discounts") or []
    planned = []
    for i, entry in enumerate(entries or []):
        discount = discount_for(store, entry, sub["customer"], sub["id"], f"discounts[{i}]")
        discount.pop("_promotion_code")
        planned.append(discount)
    return planned
