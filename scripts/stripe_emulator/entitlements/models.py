"""Entitlements Features, product features and active entitlements
(https://docs.stripe.com/billing/entitlements), with Stripe's rules.

- A feature's ``lookup_key`` is unique among the account's active features ("you can't reuse it across
  different features unless you archive the feature", https://docs.stripe.com/billing/entitlements) and
  up to 80 characters (the SDK's ``FeatureCreateParams``). The list answers active features only, or the
  archived ones with ``archived=true``; an archived feature cannot be attached to a product ("Inactive
  features cannot be attached to new products and will not be returned from the features list endpoint",
  the SDK's ``FeatureModifyParams.active``).
- A customer's active entitlements are the features attached to the products of its subscriptions'
  items ("When a customer purchases or subscribes to a product with an attached feature, Stripe creates
  and manages an Active Entitlement for that customer and feature", https://docs.stripe.com/billing/entitlements).
  They are recomputed when one of its subscriptions changes (created, items or status changed, ended):
  "Existing subscriptions will create active entitlements for any product feature changes at the start
  of the next billing period" (same page), so attaching a feature changes nobody's entitlements until
  their subscription next changes (a renewal is such a change). A subscription grants while it is
  ``active``, ``trialing`` or ``past_due``; not ``incomplete`` (unpaid), ``paused``, ``unpaid`` or ended.
- Each change sends ``entitlements.active_entitlement_summary.updated`` ("Occurs whenever a customer's
  entitlements change", https://docs.stripe.com/api/events/types) with the summary object
  (https://docs.stripe.com/api/entitlements/active-entitlement-summary/object); its ``entitlements``
  list carries at most 10, ``has_more`` telling there are others (stripe/sync-engine#197): the full list
  is read with ``GET /v1/entitlements/active_entitlements?customer=``.

The caller holds the store lock.
"""

from __future__ import annotations

from ..core.lists import list_object
from ..core.store import Store, StripeError, merge_metadata, new_id, public

LOOKUP_KEY_LENGTH = 80
SUMMARY_PAGE = 10
ENTITLING_STATUSES = frozenset({"active", "trialing", "past_due"})
SUMMARY_EVENT = "entitlements.active_entitlement_summary.updated"


def create_feature(store: Store, params: dict) -> dict:
    """``POST /v1/entitlements/features``: a new active feature."""
    key = params["lookup_key"]
    if len(key) > LOOKUP_KEY_LENGTH:
        raise StripeError(400, f"lookup_key must be at most {LOOKUP_KEY_LENGTH} characters.", param="lookup_key")
    if any(f["lookup_key"] == key and f["active"] for f in store.entitlement_features.values()):
        raise StripeError(400, f"A feature with lookup_key {key} already exists.", param="lookup_key")
    feature = {"id": new_id("feat_test_", 32), "object": "entitlements.feature", "active": True, "livemode": False,
               "lookup_key": key, "metadata": {}, "name": params["name"], "_created": store.now()}
    merge_metadata(feature, params.get("metadata") or {})
    store.entitlement_features[feature["id"]] = feature
    return feature


def update_feature(store: Store, feature: dict, params: dict) -> dict:
    """``POST /v1/entitlements/features/{id}``: its ``name``, ``metadata``, or archived (``active=false``)."""
    if params.get("active") and not feature["active"] and any(
            f["lookup_key"] == feature["lookup_key"] and f["active"] for f in store.entitlement_features.values()):
        raise StripeError(400, f"A feature with lookup_key {feature['lookup_key']} already exists.", param="active")
    if "name" in params:
        feature["name"] = params["name"]
    if "active" in params:
        feature["active"] = bool(params["active"])
    if "metadata" in params:
        merge_metadata(feature, params["metadata"])
    return feature


def list_features(store: Store, params: dict) -> list[dict]:
    """The features the list answers, newest first: active ones, or archived ones with ``archived=true``."""
    archived = bool(params.get("archived"))
    found = [f for f in store.entitlement_features.values() if f["active"] is not archived]
    if params.get("lookup_key"):
        found = [f for f in found if f["lookup_key"] == params["lookup_key"]]
    return sorted(found, key=lambda f: f["_created"], reverse=True)


def attach(store: Store, product: dict, params: dict) -> dict:
    """``POST /v1/products/{id}/features``: attach a feature; the product feature embeds it."""
    feature = store.get("entitlement_features", params["entitlement_feature"], "entitlement_feature")
    if not feature["active"]:
        raise StripeError(400, "Inactive features cannot be attached to products.", param="entitlement_feature")
    if any(pf["_product"] == product["id"] and pf["_feature"] == feature["id"]
           for pf in store.product_features.values()):
        raise StripeError(400, f"The feature {feature['id']} is already attached to this product.",
                          param="entitlement_feature")
    attached = {"id": new_id("prodft_", 24), "object": "product_feature", "livemode": False,
                "_product": product["id"], "_feature": feature["id"], "_created": store.now()}
    store.product_features[attached["id"]] = attached
    return attached


def product_feature(store: Store, product: dict, attached_id: str) -> dict:
    attached = store.product_features.get(attached_id)
    if attached is None or attached["_product"] != product["id"]:
        raise StripeError(404, f"No such product feature: '{attached_id}'", code="resource_missing", param="id")
    return attached


def render_product_feature(store: Store, attached: dict) -> dict:
    """The product feature as Stripe answers it: its feature embedded whole."""
    return {**public(attached), "entitlement_feature": public(store.entitlement_features[attached["_feature"]])}


def features_of_products(store: Store, product_ids: set[str]) -> list[dict]:
    """The features attached to any of ``product_ids``, each once."""
    ids = {pf["_feature"] for pf in store.product_features.values() if pf["_product"] in product_ids}
    return [store.entitlement_features[i] for i in sorted(ids)]


def _granted_products(store: Store, customer_id: str) -> set[str]:
    products = set()
    for sub in store.subscriptions.values():
        if sub["customer"] == customer_id and sub["status"] in ENTITLING_STATUSES:
            for item in sub["items"]["data"]:
                product = item["price"]["product"]
                products.add(product["id"] if isinstance(product, dict) else product)
    return products


def customer_entitlements(store: Store, customer_id: str) -> list[dict]:
    """The customer's active entitlements, oldest first (the order they were granted)."""
    return [e for e in store.active_entitlements.values() if e["_customer"] == customer_id]


def refresh(store: Store, customer_id: str) -> None:
    """Recompute the customer's active entitlements; send the summary event when they changed."""
    wanted = {f["id"]: f for f in features_of_products(store, _granted_products(store, customer_id))}
    held = {e["feature"]: e for e in customer_entitlements(store, customer_id)}
    if wanted.keys() == held.keys():
        return
    for feature_id, ended in held.items():
        if feature_id not in wanted:
            del store.active_entitlements[ended["id"]]
    for feature_id, feature in wanted.items():
        if feature_id not in held:
            granted = {"id": new_id("ent_test_", 32), "object": "entitlements.active_entitlement",
                       "feature": feature_id, "livemode": False, "lookup_key": feature["lookup_key"],
                       "_customer": customer_id}
            store.active_entitlements[granted["id"]] = granted
    store.emit(SUMMARY_EVENT, summary(store, customer_id))


def summary(store: Store, customer_id: str) -> dict:
    """The ``entitlements.active_entitlement_summary`` of the customer: its first 10 active entitlements."""
    held = customer_entitlements(store, customer_id)
    return {"object": "entitlements.active_entitlement_summary", "customer": customer_id, "livemode": False,
            "entitlements": list_object(held[:SUMMARY_PAGE], f"/v1/customer/{customer_id}/entitlements",
                                        has_more=len(held) > SUMMARY_PAGE)}


class SubscriptionWatcher:
    """A store listener: a subscription's event recomputes its customer's entitlements (``Store.emit``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        store.event_listeners.append(self)

    def on_event(self, event: dict, endpoints: list[dict]) -> None:
        obj = event["data"]["object"]
        if event["type"].startswith("customer.subscription.") and obj.get("object") == "subscription":
            refresh(self.store, obj["customer"])
