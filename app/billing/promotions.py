"""Promotion codes (CONTRACT "Selling"): the code a customer types, resolved at Stripe before any change.

Stripe's ``GET /v1/promotion_codes?code=...&active=true`` finds the code among the active ones; the
checks Stripe would make when redeeming it (expiry, redemptions left, the customer it is for, the
products and currency its coupon applies to) are made here from Stripe's own objects, so that a
code Stripe would refuse is ``422 invalid_promotion_code`` before the service changes anything.
"""
import time

from app.billing import redemptions
from app.billing.provider import get_provider
from app.errors import AppError


class InvalidPromotionCode(AppError):
    """422 ``invalid_promotion_code``: unknown, inactive, expired, used up or not applicable."""

    status = 422
    code = "invalid_promotion_code"

    @classmethod
    def for_code(cls, code, reason):
        return cls(f"The promotion code {code!r} cannot be used: {reason}.", details={"promotion_code": code})


def _refusal(promo, coupon, customer_id, price, now):
    """Why Stripe would refuse to redeem ``promo`` for ``price`` (a Stripe price dict), or ``None``."""
    if promo.get("expires_at") is not None and promo["expires_at"] <= now:
        return "it has expired"
    if promo.get("max_redemptions") is not None and promo.get("times_redeemed", 0) >= promo["max_redemptions"]:
        return "it has been used up"
    if promo.get("customer") and promo["customer"] != customer_id:
        return "it is for another customer"
    if not coupon.get("valid", True):
        return "its coupon is no longer valid"
    products = (coupon.get("applies_to") or {}).get("products")
    product = price.get("product")
    product_id = product.get("id") if isinstance(product, dict) else product
    if products and product_id not in products:
        return "it does not apply to this plan"
    if coupon.get("amount_off") is not None and coupon.get("currency") != price.get("currency"):
        return "it is in another currency than this plan"
    return None


def resolve(code, price_id, billable):
    """Return the id of the active promotion code ``code`` (as typed) for ``price_id``, or ``None`` without one.

    A code one of ``billable``'s subscriptions already carried is refused too (``PromotionRedemption``):
    Stripe lets a customer redeem a code again unless the merchant capped it, and a ``once`` code
    sent with every upgrade would discount every period. Raises ``InvalidPromotionCode`` (422),
    ``UnknownPrice`` (422) and ``ProviderUnavailable`` (503). Only reads at Stripe.
    """
    customer_id = billable.provider_id
    if code is None:
        return None
    provider = get_provider()
    promo = provider.find_promotion_code(code)
    if promo is None:
        raise InvalidPromotionCode.for_code(code, "no active promotion code has it")
    coupon = (promo.get("promotion") or {}).get("coupon")
    if not isinstance(coupon, dict):
        raise InvalidPromotionCode.for_code(code, "it grants no coupon")
    reason = _refusal(promo, coupon, customer_id, provider.retrieve_price(price_id), int(time.time()))
    if reason is None and redemptions.redeemed(billable, promo["id"]):
        reason = "you have used it already"
    if reason:
        raise InvalidPromotionCode.for_code(code, reason)
    return promo["id"]
