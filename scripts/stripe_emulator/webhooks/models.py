"""Webhook endpoints: the object, and its signing secret shown only when it is created."""

from __future__ import annotations

from ..core.store import Store, new_id, public


def webhook_endpoint(store: Store, params: dict) -> dict:
    return {
        "id": new_id("we_"), "object": "webhook_endpoint",
        "api_version": params.get("api_version"), "application": None,
        "created": store.now(), "description": params.get("description"),
        "enabled_events": list(params["enabled_events"]), "livemode": False,
        "metadata": dict(params.get("metadata") or {}), "status": "enabled",
        "url": params["url"], "_secret": "whsec_" + new_id("", 32),
    }


def render_endpoint(we, with_secret=False):
    out = public(we)
    if with_secret:  # Stripe reveals the signing secret only in the create response.
        out["secret"] = we["_secret"]
    return out
