"""``/v1/entitlements/features``, ``/v1/products/{id}/features`` and ``/v1/entitlements/active_entitlements`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import paginate, strip_data
from ..customers.models import live_customer
from . import models

bp = Blueprint("stripe_entitlements", __name__)


@bp.post("/v1/entitlements/features")
@endpoint()
def create_feature(st, params):
    return render(st, models.create_feature(st, params), params.get("expand"))


@bp.get("/v1/entitlements/features")
@endpoint()
def list_features(st, params):
    page = paginate(models.list_features(st, params), params, "/v1/entitlements/features")
    page["data"] = [render(st, f, strip_data(params.get("expand"))) for f in page["data"]]
    return page


@bp.get("/v1/entitlements/features/<feat_id>")
@endpoint()
def retrieve_feature(st, params, feat_id):
    return render(st, st.get("entitlement_features", feat_id), params.get("expand"))


@bp.post("/v1/entitlements/features/<feat_id>")
@endpoint()
def update_feature(st, params, feat_id):
    return render(st, models.update_feature(st, st.get("entitlement_features", feat_id), params), params.get("expand"))


@bp.post("/v1/products/<prod_id>/features")
@endpoint()
def attach_feature(st, params, prod_id):
    attached = models.attach(st, st.get("products", prod_id), params)
    return render(st, models.render_product_feature(st, attached), params.get("expand"))


@bp.get("/v1/products/<prod_id>/features")
@endpoint()
def list_product_features(st, params, prod_id):
    product = st.get("products", prod_id)
    attached = sorted((pf for pf in st.product_features.values() if pf["_product"] == product["id"]),
                      key=lambda pf: pf["_created"], reverse=True)
    page = paginate(attached, params, f"/v1/products/{prod_id}/features")
    page["data"] = [render(st, models.render_product_feature(st, pf), strip_data(params.get("expand")))
                    for pf in page["data"]]
    return page


@bp.get("/v1/products/<prod_id>/features/<prodft_id>")
@endpoint()
def retrieve_product_feature(st, params, prod_id, prodft_id):
    attached = models.product_feature(st, st.get("products", prod_id), prodft_id)
    return render(st, models.render_product_feature(st, attached), params.get("expand"))


@bp.delete("/v1/products/<prod_id>/features/<prodft_id>")
@endpoint()
def detach_feature(st, params, prod_id, prodft_id):
    attached = models.product_feature(st, st.get("products", prod_id), prodft_id)
    del st.product_features[attached["id"]]
    return {"id": attached["id"], "object": "product_feature", "deleted": True}


@bp.get("/v1/entitlements/active_entitlements")
@endpoint()
def list_active_entitlements(st, params):
    # A deleted customer is no customer: "No such customer", as every customer endpoint answers.
    customer = live_customer(st, params["customer"], "customer")
    page = paginate(models.customer_entitlements(st, customer["id"]), params, "/v1/entitlements/active_entitlements")
    page["data"] = [render(st, e, strip_data(params.get("expand"))) for e in page["data"]]
    return page


@bp.get("/v1/entitlements/active_entitlements/<ent_id>")
@endpoint()
def retrieve_active_entitlement(st, params, ent_id):
    return render(st, st.get("active_entitlements", ent_id), params.get("expand"))
