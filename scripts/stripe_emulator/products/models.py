"""Products and prices (https://docs.stripe.com/api/prices), and the legacy ``plan`` view of a price."""

from __future__ import annotations

from ..core.store import Store, new_id


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
               "meter": None, "trial_period_days": None, "usage_type": "licensed"}
    return {
        "id": new_id("price_"), "object": "price", "active": True, "billing_scheme": "per_unit",
        "created": store.now(), "currency": params["currency"].lower(),
        "custom_unit_amount": None, "livemode": False, "lookup_key": params.get("lookup_key"),
        "metadata": dict(params.get("metadata") or {}), "nickname": params.get("nickname"),
        "product": product_id, "recurring": rec, "tax_behavior": "unspecified",
        "tiers_mode": None, "transform_quantity": None,
        "type": "recurring" if rec else "one_time",
        "unit_amount": amount, "unit_amount_decimal": str(amount),
    }


def legacy_plan(p: dict) -> dict:
    """The ``plan`` view of a price, still present on subscription items."""
    rec = p["recurring"] or {}
    return {
        "id": p["id"], "object": "plan", "active": p["active"], "amount": p["unit_amount"],
        "amount_decimal": p["unit_amount_decimal"], "billing_scheme": "per_unit",
        "created": p["created"], "currency": p["currency"], "interval": rec.get("interval"),
        "interval_count": rec.get("interval_count"), "livemode": False,
        "metadata": p["metadata"], "meter": None, "nickname": p["nickname"],
        "product": p["product"], "tiers_mode": None, "transform_usage": None,
        "trial_period_days": None, "usage_type": "licensed",
    }


def add_product(st, params):
    prod = product(st, params)
    st.products[prod["id"]] = prod
    st.emit("product.created", prod)
    return prod
