"""``/v1/coupons`` and ``/v1/promotion_codes`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from . import models

bp = Blueprint("stripe_discounts", __name__)


@bp.post("/v1/coupons")
@endpoint()
def create_coupon(st, params):
    return render(st, models.create_coupon(st, params), params.get("expand"))


@bp.get("/v1/coupons/<coupon_id>")
@endpoint()
def retrieve_coupon(st, params, coupon_id):
    return render(st, st.get("coupons", coupon_id), params.get("expand"))


@bp.post("/v1/promotion_codes")
@endpoint(required=("promotion",))
def create_promotion_code(st, params):
    return render(st, models.create_promotion_code(st, params), params.get("expand"))


@bp.get("/v1/promotion_codes/<promo_id>")
@endpoint()
def retrieve_promotion_code(st, params, promo_id):
    return render(st, st.get("promotion_codes", promo_id), params.get("expand"))


@bp.post("/v1/promotion_codes/<promo_id>")
@endpoint()
def update_promotion_code(st, params, promo_id):
    promo = models.update_promotion_code(st, st.get("promotion_codes", promo_id), params)
    return render(st, promo, params.get("expand"))


@bp.get("/v1/promotion_codes")
@endpoint()
def list_promotion_codes(st, params):
    promos = newest_first(st.promotion_codes.values())
    if params.get("code"):  # Stripe matches the code case-insensitively
        promos = [p for p in promos if p["code"].lower() == params["code"].lower()]
    for name in ("active", "customer"):
        if name in params:
            promos = [p for p in promos if p[name] == params[name]]
    if params.get("coupon"):
        promos = [p for p in promos if p["promotion"]["coupon"] == params["coupon"]]
    page = paginate(promos, params, "/v1/promotion_codes")
    page["data"] = [render(st, p, strip_data(params.get("expand"))) for p in page["data"]]
    return page
