"""``/v1/billing_portal/configurations`` (https://docs.stripe.com/api/customer_portal/configurations):
what a portal session lets its customer do, and the rules the portal page (``portal.py``) keeps.

A session without ``configuration`` uses the account's default one, which here allows what a new
Stripe account's default portal allows once plan changes are switched on: any active recurring
price, prorated (``create_prorations``), cancel at once or at the period's end. A plan change that
``subscription_update.schedule_at_period_end`` names waits for the period's end
(``schedules/portal_changes.py``).
"""

from __future__ import annotations

from flask import Blueprint

from ..core.http import endpoint
from ..core.lists import newest_first, paginate
from ..core.store import Store, StripeError, new_id, public
from ..products.models import subscribable

bp = Blueprint("stripe_portal_configurations", __name__)

DEFAULT_ID = "bpc_emulator_default"


def _features(params: dict, before: dict | None = None) -> dict:
    """The ``features`` object from create/update ``params`` over ``before`` (Stripe's defaults when new)."""
    old = before or {
        "customer_update": {"allowed_updates": [], "enabled": False},
        "invoice_history": {"enabled": False},
        "payment_method_update": {"enabled": False, "payment_method_configuration": None},
        "subscription_cancel": {"cancellation_reason": {"enabled": False, "options": []}, "enabled": False,
                                "mode": "at_period_end", "proration_behavior": "none"},
        "subscription_update": {"default_allowed_updates": [], "enabled": False, "products": [],
                                "proration_behavior": "none", "schedule_at_period_end": {"conditions": []},
                                "trial_update_behavior": "end_trial", "billing_cycle_anchor": None},
    }
    features = {name: dict(value) for name, value in old.items()}
    for name, given in (params or {}).items():
        if name not in features:
            raise StripeError(400, f"The emulator does not model the portal feature {name!r}.",
                              code="parameter_unsupported", param=f"features[{name}]")
        features[name].update({key: value for key, value in given.items() if key != "products"})
        # Answered whole, ``conditions`` always a list, since 2024-12-18.acacia
        # (https://docs.stripe.com/changelog/acacia/2024-12-18/portal-config-schedule-at-period-end-required).
        if "schedule_at_period_end" in given:
            features[name]["schedule_at_period_end"] = {"conditions": [
                {"type": condition["type"]} for condition in (given["schedule_at_period_end"] or {}).get("conditions")
                or ()]}
        if "products" in given:
            features[name]["products"] = [
                {"product": p["product"], "prices": list(p.get("prices") or []),
                 "adjustable_quantity": {"enabled": bool((p.get("adjustable_quantity") or {}).get("enabled")),
                                         "maximum": None, "minimum": 1}}
                for p in given["products"] or []]
    return features


# "The list of up to 10 products that support subscription updates" (the SDK's ``products``).
PRODUCTS_MAX = 10


def _required_when_enabled(given: dict) -> None:
    """Creating a configuration whose ``subscription_update`` is enabled needs its ``default_allowed_updates`` and
    ``products``: since 2024-09-30.acacia they are optional only with ``enabled=false`` ("You won't encounter a
    missing parameter error when you set subscription_update.enabled to false",
    https://docs.stripe.com/changelog/acacia/2024-09-30/billing-portal-updates-optional), so enabled without them is
    Stripe's missing parameter error."""
    update = given.get("subscription_update") or {}
    for name in ("default_allowed_updates", "products"):
        if update.get("enabled") and name not in update:
            raise StripeError(400, f"Missing required param: features[subscription_update][{name}].",
                              code="parameter_missing", param=f"features[subscription_update][{name}]")


def _check(store: Store, features: dict) -> dict:
    """Stripe's rules of a configuration's features (https://docs.stripe.com/api/customer_portal/configurations/create,
    the SDK's parameter texts): products are needed to offer price updates, at most ``PRODUCTS_MAX``, each
    with "the list of price IDs for the product" (active recurring prices of that product); a cancel
    prorates (``create_prorations``) only when it is ``immediately``, and never invoices at once ("Passing
    ``always_invoice`` will result in an error", the SDK's ``subscription_cancel.proration_behavior``)."""
    update = features["subscription_update"]
    if update["enabled"] and not update["products"] and "price" in update["default_allowed_updates"]:
        raise StripeError(400, "You must specify at least one product when price updates are allowed.",
                          param="features[subscription_update][products]")
    if len(update["products"]) > PRODUCTS_MAX:
        raise StripeError(400, f"You can specify at most {PRODUCTS_MAX} products.",
                          param="features[subscription_update][products]")
    for i, entry in enumerate(update["products"]):
        param = f"features[subscription_update][products][{i}][prices]"
        store.get("products", entry["product"], f"features[subscription_update][products][{i}][product]")
        for price_id in entry["prices"]:
            if subscribable(store, price_id, param)["product"] != entry["product"]:
                raise StripeError(400, f"The price {price_id} is not a price of the product {entry['product']}.",
                                  param=param)
    cancel = features["subscription_cancel"]
    if cancel["proration_behavior"] == "always_invoice":
        raise StripeError(400, "proration_behavior=always_invoice is not supported when canceling subscriptions.",
                          param="features[subscription_cancel][proration_behavior]")
    if cancel["proration_behavior"] == "create_prorations" and cancel["mode"] != "immediately":
        raise StripeError(400, "proration_behavior=create_prorations is only compatible with mode=immediately.",
                          param="features[subscription_cancel][proration_behavior]")
    return features


def create_configuration(store: Store, params: dict, config_id: str | None = None) -> dict:
    now = store.now()
    features = _features(params.get("features") or {})
    if config_id != DEFAULT_ID:  # the account's default offers every price, as a new account's does
        _required_when_enabled(params.get("features") or {})
        _check(store, features)
    config = {
        "id": config_id or new_id("bpc_"), "object": "billing_portal.configuration", "active": True,
        "application": None,
        "business_profile": {"headline": None, "privacy_policy_url": None, "terms_of_service_url": None,
                             **(params.get("business_profile") or {})},
        "created": now, "default_return_url": params.get("default_return_url") or None,
        "features": features, "is_default": config_id == DEFAULT_ID,
        "livemode": False, "login_page": {"enabled": False, "url": None},
        "metadata": dict(params.get("metadata") or {}), "name": params.get("name") or None, "updated": now,
    }
    store.portal_configurations[config["id"]] = config
    return config


def default_configuration(store: Store) -> dict:
    """The account's default configuration, made on first use."""
    if DEFAULT_ID not in store.portal_configurations:
        create_configuration(store, {"features": {
            "invoice_history": {"enabled": True}, "payment_method_update": {"enabled": True},
            "subscription_cancel": {"enabled": True, "mode": "at_period_end"},
            "subscription_update": {"enabled": True, "default_allowed_updates": ["price"],
                                    "proration_behavior": "create_prorations"}}}, DEFAULT_ID)
    return store.portal_configurations[DEFAULT_ID]


def offered_prices(store: Store, config: dict) -> list[dict] | None:
    """The prices the portal offers for a plan change under ``config``: ``None`` when it offers none."""
    update = config["features"]["subscription_update"]
    if not update["enabled"] or "price" not in update["default_allowed_updates"]:
        return None
    listed = {price for product in update["products"] for price in product["prices"]}
    return [p for p in store.prices.values() if p["recurring"] and p["active"]
            and (config["id"] == DEFAULT_ID or p["id"] in listed)]


@bp.post("/v1/billing_portal/configurations")
@endpoint(required=("features",))
def create(st, params):
    return public(create_configuration(st, params))


@bp.post("/v1/billing_portal/configurations/<config_id>")
@endpoint()
def update(st, params, config_id):
    config = st.get("portal_configurations", config_id)
    if "features" in params:
        config["features"] = _check(st, _features(params["features"], config["features"]))
    for key in ("active", "default_return_url", "name"):
        if key in params:
            config[key] = params[key]
    if "metadata" in params:
        config["metadata"] = dict(params["metadata"] or {})
    if "business_profile" in params:
        config["business_profile"].update(params["business_profile"] or {})
    config["updated"] = st.now()
    return public(config)


@bp.get("/v1/billing_portal/configurations/<config_id>")
@endpoint()
def retrieve(st, params, config_id):
    return public(st.get("portal_configurations", config_id))


@bp.get("/v1/billing_portal/configurations")
@endpoint()
def list_configurations(st, params):
    configs = newest_first(st.portal_configurations.values())
    for key in ("active", "is_default"):
        if key in params:
            configs = [c for c in configs if c[key] == params[key]]
    return paginate(configs, params, "/v1/billing_portal/configurations")
