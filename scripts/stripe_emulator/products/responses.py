"""``/v1/products`` and ``/v1/prices`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from ..core.store import StripeError
from . import models

bp = Blueprint("stripe_products", __name__)


@bp.post("/v1/products")
@endpoint()
def create_product(st, params):
    return render(st, models.add_product(st, params), params.get("expand"))


@bp.get("/v1/products/<prod_id>")
@endpoint()
def retrieve_product(st, params, prod_id):
    return render(st, st.get("products", prod_id), params.get("expand"))


@bp.get("/v1/products")
@endpoint()
def list_products(st, params):
    products = newest_first(st.products.values())
    if "active" in params:
        products = [p for p in products if p["active"] == bool(params["active"])]
    if params.get("ids"):
        products = [p for p in products if p["id"] in params["ids"]]
    page = paginate(products, params, "/v1/products")
    page["data"] = [render(st, p, strip_data(params.get("expand"))) for p in page["data"]]
    return page


@bp.post("/v1/products/<prod_id>")
@endpoint()
def update_product(st, params, prod_id):
    return render(st, models.update_product(st, st.get("products", prod_id), params), params.get("expand"))


@bp.delete("/v1/products/<prod_id>")
@endpoint()
def delete_product(st, params, prod_id):
    return models.delete_product(st, st.get("products", prod_id))


@bp.post("/v1/prices")
@endpoint(required=("unit_amount",))
def create_price(st, params):
    if params.get("product"):
        product_id = st.get("products", params["product"], "product")["id"]
    elif params.get("product_data"):
        product_id = models.add_product(st, params["product_data"])["id"]
    else:
        raise StripeError(400, "You must specify either `product` or `product_data` when "
                          "creating a price.", param="product")
    if params.get("lookup_key"):
        for other in st.prices.values():
            if other["lookup_key"] == params["lookup_key"]:
                if not bool(params.get("transfer_lookup_key")):
                    raise StripeError(400, f"A price (`{other['id']}`) already uses that "
                                      "lookup key.", param="lookup_key")
                other["lookup_key"] = None
    p = models.price(st, params, product_id)
    st.prices[p["id"]] = p
    st.emit("price.created", p)
    return render(st, p, params.get("expand"))


@bp.get("/v1/prices/<price_id>")
@endpoint()
def retrieve_price(st, params, price_id):
    return render(st, st.get("prices", price_id), params.get("expand"))


@bp.get("/v1/prices")
@endpoint()
def list_prices(st, params):
    prices = newest_first(st.prices.values())
    if params.get("product"):
        prices = [p for p in prices if p["product"] == params["product"]]
    if params.get("lookup_keys"):
        prices = [p for p in prices if p["lookup_key"] in params["lookup_keys"]]
    if "active" in params:
        prices = [p for p in prices if p["active"] == bool(params["active"])]
    if params.get("type"):
        prices = [p for p in prices if p["type"] == params["type"]]
    if params.get("currency"):
        prices = [p for p in prices if p["currency"] == params["currency"].lower()]
    page = paginate(prices, params, "/v1/prices")
    page["data"] = [render(st, p, strip_data(params.get("expand"))) for p in page["data"]]
    return page


@bp.post("/v1/prices/<price_id>")
@endpoint()
def update_price(st, params, price_id):
    return render(st, models.update_price(st, st.get("prices", price_id), params), params.get("expand"))
