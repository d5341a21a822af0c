"""``/v1/webhook_endpoints`` and ``/v1/events`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.http import endpoint
from ..core.lists import newest_first, paginate
from ..core.store import merge_metadata, public
from . import models

bp = Blueprint("stripe_webhooks", __name__)

@bp.post("/v1/webhook_endpoints")
@endpoint()
def create_webhook_endpoint(st, params):
    we = models.webhook_endpoint(st, params)
    st.webhook_endpoints[we["id"]] = we
    return models.render_endpoint(we, with_secret=True)


@bp.get("/v1/webhook_endpoints/<we_id>")
@endpoint()
def retrieve_webhook_endpoint(st, params, we_id):
    return models.render_endpoint(st.get("webhook_endpoints", we_id))


@bp.post("/v1/webhook_endpoints/<we_id>")
@endpoint()
def update_webhook_endpoint(st, params, we_id):
    we = st.get("webhook_endpoints", we_id)
    if "url" in params:
        we["url"] = params["url"]
    if "enabled_events" in params:
        we["enabled_events"] = list(params["enabled_events"])
    if "disabled" in params:
        we["status"] = "disabled" if bool(params["disabled"]) else "enabled"
    if "description" in params:
        we["description"] = params["description"] or None
    if "metadata" in params:
        merge_metadata(we, params["metadata"])
    return models.render_endpoint(we)


@bp.delete("/v1/webhook_endpoints/<we_id>")
@endpoint()
def delete_webhook_endpoint(st, params, we_id):
    st.get("webhook_endpoints", we_id)
    del st.webhook_endpoints[we_id]
    return {"id": we_id, "object": "webhook_endpoint", "deleted": True}


@bp.get("/v1/webhook_endpoints")
@endpoint()
def list_webhook_endpoints(st, params):
    page = paginate(newest_first(st.webhook_endpoints.values()), params,
                    "/v1/webhook_endpoints")
    page["data"] = [models.render_endpoint(we) for we in page["data"]]
    return page


@bp.get("/v1/events/<evt_id>")
@endpoint()
def retrieve_event(st, params, evt_id):
    return public(st.get("events", evt_id))


@bp.get("/v1/events")
@endpoint()
def list_events(st, params):
    events = sorted(st.events.values(), key=lambda e: e["_seq"], reverse=True)
    types = params.get("types") or ([params["type"]] if params.get("type") else None)
    if types:
        def wanted(t):  # Stripe accepts a trailing wildcard, e.g. customer.subscription.*
            return any(t == p or (p.endswith("*") and t.startswith(p[:-1])) for p in types)
        events = [e for e in events if wanted(e["type"])]
    page = paginate(events, params, "/v1/events")
    page["data"] = [public(e) for e in page["data"]]
    return page
