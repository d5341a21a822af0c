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


def _refusal(promo, coupon, customer_id, order, now):
    """Why Stripe would refuse to redeem ``promo`` for ``order`` (``{"price": Stripe price dict, "quantity"}``),
    or ``None``. Everything but ``first_time_transaction``, which needs the customer's invoices."""
    price = order["price"]
    if promo.get("expires_at") is not None and promo["expires_at"] <= now:
        return "it has expired"
    if promo.get("max_redemptions") is not None and promo.get("times_redeemed", 0) >= promo["max_redemptions"]:
        return "it has been used up"
    if promo.get("customer") and promo["customer"] != customer_id:
        return "it is for another customer"
    # https://docs.stripe.com/api/coupons/object: max_redemptions and redeem_by end a coupon for every code.
    if not coupon.get("valid", True) or (coupon.get("max_redemptions") is not None
                                         and coupon.get("times_redeemed", 0) >= coupon["max_redemptions"]):
        return "its coupon is no longer valid"
    if coupon.get("redeem_by") is not None and coupon["redeem_by"] <= now:
        return "its coupon has expired"
    minimum = (promo.get("restrictions") or {}).get("minimum_amount")
    if minimum is not None and ((price.get("unit_amount") or 0) * order["quantity"] < minimum
                                or price.get("currency") != promo["restrictions"].get("minimum_amount_currency")):
        return f"it needs an order of at least {minimum} {promo['restrictions'].get('minimum_amount_currency')}"
    products = (coupon.get("applies_to") or {}).get("products")
    product = price.get("product")
    product_id = product.get("id") if isinstance(product, dict) else product
    if products and product_id not in products:
        return "it does not apply to this plan"
    if coupon.get("amount_off") is not None and coupon.get("currency") != price.get("currency"):
        return "it is in another currency than this plan"
    return None


def resolve(code, price_id, billable, quantity=1):
    """Return the id of the active promotion code ``code`` (as typed) for ``price_id`` x ``quantity``, or
    ``None`` without one.

    A code one of ``billable``'s subscriptions already carried is refused too (``PromotionRedemption``):
    Stripe lets a customer redeem a code again unless the merchant capped it, and a ``once`` code
    sent with every upgrade would discount every period. The code's ``restrictions`` are checked
    here, before any change (https://docs.stripe.com/api/promotion_codes/object#promotion_code_object-restrictions):
    ``minimum_amount`` against one period of the order, ``first_time_transaction`` against the
    customer's paid invoices (one page of one). Raises ``InvalidPromotionCode`` (422),
    ``UnknownPrice`` (422) and ``ProviderUnavailable`` (503). Only reads at Stripe, at most 3 calls.
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
    order = {"price": provider.retrieve_price(price_id), "quantity": quantity}
    reason = _refusal(promo, coupon, customer_id, order, int(time.time()))
    if reason is None and redemptions.redeemed(billable, promo["id"]):
        reason = "you have used it already"
    if reason is None and (promo.get("restrictions") or {}).get("first_time_transaction") and customer_id \
            and provider.has_paid_invoice(customer_id):
        reason = "it is for a first purchase only"
    if reason:
        raise InvalidPromotionCode.for_code(code, reason)
    return promo["id"]


def refuse_redeemed(billable, promotion_code_id, code=None):
    """Raise ``InvalidPromotionCode`` (422) when ``billable`` or the acting person took ``promotion_code_id``
    (an id; ``None``: nothing to check) since ``resolve`` passed it: the check again, under the person's lock
    (``redemptions.lock_person``) held until the new subscription's record commits, so that two requests of
    one person for two organisations redeem it once. ``code`` is the code as typed, for the answer. No Stripe call."""
    if promotion_code_id and redemptions.redeemed(billable, promotion_code_id):
        raise InvalidPromotionCode.for_code(code or promotion_code_id, "you have used it already")
