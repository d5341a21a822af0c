"""Products and prices (https://docs.stripe.com/api/prices), and the legacy ``plan`` view of a price."""

from __future__ import annotations

import copy

from ..core.store import Store, StripeError, merge_metadata, new_id


def product(store: Store, params: dict) -> dict:
    now = store.now()
    return {
        "id": params.get("id") or new_id("prod_", 14), "object": "product", "active": True,
        "created": now, "default_price": None, "description": params.get("description"),
        "images": [], "livemode": False, "marketing_features": [],
        "metadata": dict(params.get("metadata") or {}), "name": params["name"],
        "package_dimensions": None, "shippable": None, "statement_descriptor": None,
        "tax_code": None, "type": "service", "unit_label": None, "updated": now, "url": None,
    }


def price(store: Store, params: dict, product_id: str) -> dict:
    recurring = params.get("recurring")
    amount = int(params["unit_amount"])
    rec = None
    if recurring:
        rec = {"interval": recurring.get("interval", "month"),
               "interval_count": int(recurring.get("interval_count") or 1),
               "meter": _meter(store, recurring), "trial_period_days": None,
               "usage_type": recurring.get("usage_type") or "licensed"}
    return {
        "id": new_id("price_"), "object": "price", "active": params.get("active", True), "billing_scheme": "per_unit",
        "created": store.now(), "currency": params["currency"].lower(),
        "custom_unit_amount": None, "livemode": False, "lookup_key": params.get("lookup_key"),
        "metadata": dict(params.get("metadata") or {}), "nickname": params.get("nickname"),
        "product": product_id, "recurring": rec, "tax_behavior": "unspecified",
        "tiers_mode": None, "transform_quantity": None,
        "type": "recurring" if rec else "one_time",
        "unit_amount": amount, "unit_amount_decimal": str(amount),
    }


def _meter(store: Store, recurring: dict) -> str | None:
    """The meter of a ``metered`` price: required since ``2025-03-31.basil``, which removed usage records
    (https://docs.stripe.com/changelog/basil/2025-03-31/deprecate-legacy-usage-based-billing)."""
    if recurring.get("usage_type") != "metered":
        if recurring.get("meter"):
            raise StripeError(400, "A meter can only be set on a price with `recurring[usage_type]=metered`.",
                              param="recurring[meter]")
        return None
    if not recurring.get("meter"):
        raise StripeError(400, "Prices with `recurring[usage_type]=metered` must be backed by a meter: "
                          "set `recurring[meter]`.", param="recurring[meter]")
    return store.get("meters", recurring["meter"], "recurring[meter]")["id"]


def metered(p: dict) -> bool:
    return (p.get("recurring") or {}).get("usage_type") == "metered"


def legacy_plan(p: dict) -> dict:
    """The ``plan`` view of a price, still present on subscription items."""
    rec = p["recurring"] or {}
    return {
        "id": p["id"], "object": "plan", "active": p["active"], "amount": p["unit_amount"],
        "amount_decimal": p["unit_amount_decimal"], "billing_scheme": "per_unit",
        "created": p["created"], "currency": p["currency"], "interval": rec.get("interval"),
        "interval_count": rec.get("interval_count"), "livemode": False,
        "metadata": p["metadata"], "meter": rec.get("meter"), "nickname": p["nickname"],
        "product": p["product"], "tiers_mode": None, "transform_usage": None,
        "trial_period_days": None, "usage_type": rec.get("usage_type", "licensed"),
    }


def add_product(st, params):
    prod = product(st, params)
    st.products[prod["id"]] = prod
    st.emit("product.created", prod)
    return prod


def subscribable(store: Store, price_id, param: str, currency: str | None = None) -> dict:
    """The price ``price_id`` for a subscription item, refused as Stripe refuses it: missing, inactive,
    one-time, or in another currency than the subscription's ``currency``."""
    found = store.get("prices", price_id, param)
    if not found["active"]:
        raise StripeError(400, "The price specified is inactive. This field only accepts active prices.", param=param)
    if not found["recurring"]:
        raise StripeError(400, "The price specified is set to `type=one_time` but this field only accepts prices "
                          "with `type=recurring`.", param=param)
    if currency is not None and found["currency"] != currency:
        raise StripeError(400, f"The price specified only supports `{found['currency']}`. This doesn't match the "
                          f"expected currency: `{currency}`.", param=param)
    return found

# What ``POST /v1/products/{id}`` and ``POST /v1/prices/{id}`` may change
# (https://docs.stripe.com/api/products/update, /prices/update); amounts and intervals never change.
PRODUCT_FIELDS = ("name", "description", "active")
PRICE_FIELDS = ("active", "nickname", "lookup_key")


def _update(st, obj, params, fields, event):
    before = copy.deepcopy(obj)
    for name in fields:
        if name in params:
            obj[name] = params[name]
    if "metadata" in params:
        merge_metadata(obj, params["metadata"])
    if obj != before:
        if "updated" in obj:  # products carry it, prices do not
            obj["updated"] = st.now()
        st.emit(event, obj, before)
    return obj


def update_product(st, prod, params):
    """Change what Stripe lets change on a product; ``product.updated`` names what moved."""
    return _update(st, prod, params, PRODUCT_FIELDS, "product.updated")


def update_price(st, p, params):
    """Archive (``active=false``) or rename a price; ``price.updated`` names what moved."""
    return _update(st, p, params, PRICE_FIELDS, "price.updated")


def delete_product(st, prod):
    """Delete a product with no prices (Stripe refuses one that has any); ``product.deleted``."""
    if any(p["product"] == prod["id"] for p in st.prices.values()):
        raise StripeError(400, "This product cannot be deleted because it has one or more user-created prices.",
                          param="id")
    del st.products[prod["id"]]
    st.emit("product.deleted", prod)
    return {"id": prod["id"], "object": "product", "deleted": True}
