"""Selling endpoints (CONTRACT "Additions (fourth round)" -> "Selling"), on the ``subscription`` blueprint."""
import hashlib
import json

from flask import make_response, request

from app.billing import catalog
from app.subscription.selling_schemas import PlanListSchema
from app.subscription.views import blp

CATALOG_HEADERS = {
    "ETag": {"description": "A strong validator of the body: send it as If-None-Match to get 304",
             "schema": {"type": "string"}},
    "Cache-Control": {"description": "public, no-cache: any cache may keep it, and revalidates it (ETag) "
                                     "before each use, so a catalogue change reaches clients at once",
                      "schema": {"type": "string"}},
}


@blp.route("/plans", methods=["GET"])
@blp.response(200, PlanListSchema, headers=CATALOG_HEADERS)
@blp.alt_response(304, description="Not modified: the If-None-Match ETag is the catalogue's", success=True)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def plans():
    """Return the plan catalogue: the active recurring prices of ``PROVIDER_PLANS``, as Stripe has them.

    No authentication. Served from the process's copy (``PROVIDER_CATALOG_TTL``; a ``product.*`` or
    ``price.*`` webhook refreshes it); 503 ``provider_unavailable`` when Stripe cannot be read.
    """
    body = PlanListSchema().dump({"data": catalog.plans()})
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    etag = hashlib.sha256(text.encode()).hexdigest()[:32]
    fresh = request.if_none_match.contains(etag)
    response = make_response("" if fresh else text, 304 if fresh else 200)
    response.set_etag(etag)
    response.headers["Cache-Control"] = "public, no-cache"
    return response
