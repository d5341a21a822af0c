"""Selling endpoints (CONTRACT "Additions (fourth round)" -> "Selling"), on the ``subscription`` blueprint."""
import hashlib
import json

from flask import g, make_response, request

from app.auth import recovery
from app.billing import catalog, promotions
from app.billing.seats import seat_count
from app.extensions import db
from app.http import NO_STORE
from app.subscription import billing_details, service
from app.subscription.billables import current_billable
from app.subscription.selling_schemas import (
    BillingDetailsRequestSchema,
    BillingDetailsSchema,
    CheckoutRequestSchema,
    CheckoutSchema,
    PlanListSchema,
    TaxIdRequestSchema,
    TaxIdSchema,
)
from app.subscription.views import READ, WRITE, blp, subscription_route

CATALOG_HEADERS = {
    "ETag": {"description": "A strong validator of the body: send it as If-None-Match to get 304",
             "schema": {"type": "string"}},
    "Cache-Control": {"description": "public, no-cache: any cache may keep it, and revalidates it (ETag) "
                                     "before each use, so a catalogue change reaches clients at once",
                      "schema": {"type": "string"}},
}


def _render_plans(plans):
    """``GET /plans``'s body (JSON text) and its strong ETag (of those bytes)."""
    text = json.dumps(PlanListSchema().dump({"data": plans}), sort_keys=True, separators=(",", ":"))
    return text, hashlib.sha256(text.encode()).hexdigest()[:32]


@blp.route("/plans", methods=["GET"])
@blp.response(200, PlanListSchema, headers=CATALOG_HEADERS)
@blp.alt_response(304, description="Not modified: the If-None-Match ETag is the catalogue's", success=True)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def plans():
    """Return the plan catalogue: the active recurring prices of ``PROVIDER_PLANS``, as Stripe has them.

    No authentication. Served from the process's copy (``PROVIDER_CATALOG_TTL``; a ``product.*`` or
    ``price.*`` webhook refreshes it); 503 ``provider_unavailable`` when Stripe cannot be read.
    """
    text, etag = catalog.rendered(_render_plans)
    # If-None-Match compares weakly (RFC 9110 13.1.2): W/"x" matches "x", as a cache may have weakened it.
    fresh = request.if_none_match.contains_weak(etag)
    response = make_response("" if fresh else text, 304 if fresh else 200)
    response.set_etag(etag)
    response.headers["Cache-Control"] = "public, no-cache"
    return response


@blp.route("/subscription/checkout", methods=["POST"])
@subscription_route(WRITE, keyed=True)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.arguments(CheckoutRequestSchema)
@blp.response(201, CheckoutSchema, headers=NO_STORE)
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def checkout(body):
    """Create a Stripe Checkout Session (mode ``subscription``) for the user's customer; send the browser to ``url``.

    The subscription Stripe creates once the customer paid arrives by webhook
    (``checkout.session.completed``) and shows as through ``/subscription/intent``. 409
    ``already_subscribed``; 422 ``unknown_price``, ``invalid_promotion_code`` (before anything
    changes at Stripe), ``validation_error`` for a ``success_url`` / ``cancel_url`` off
    ``CHECKOUT_ALLOWED_HOSTS``; 502 ``provider_rejected``; 503 ``provider_unavailable``; 403
    ``email_unverified`` with ``AUTH_REQUIRE_VERIFIED_EMAIL`` until the address is verified.
    """
    recovery.require_verified_email(g.current_user)
    billable = current_billable()
    quantity = seat_count(billable) or body["quantity"]
    promotion = promotions.resolve(body["promotion_code"], body["price"], billable, quantity)
    service.ensure_customer(billable)
    # Committed before the session exists, as for an intent: its webhooks must find the billable.
    db.session.commit()
    line = {"price": body["price"], "quantity": quantity}
    urls = {"success_url": body["success_url"], "cancel_url": body["cancel_url"]}
    return service.create_checkout(billable, line, urls, promotion, body["promotion_code"]), 201


@blp.route("/subscription/billing-details", methods=["GET"])
@subscription_route(READ)
@blp.response(200, BillingDetailsSchema, headers=NO_STORE)
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def show_billing_details():
    """Return the name, address and tax ids on the user's Stripe customer, read from Stripe."""
    return billing_details.read(current_billable())


@blp.route("/subscription/billing-details", methods=["PUT"])
@subscription_route(WRITE)
@blp.arguments(BillingDetailsRequestSchema)
@blp.response(200, BillingDetailsSchema, headers=NO_STORE)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def put_billing_details(body):
    """Write the name and address on the user's Stripe customer (created on first use); answer Stripe's.

    Stripe Tax reads them (``PROVIDER_AUTOMATIC_TAX``). 502 ``provider_rejected`` when Stripe refuses the address.
    """
    answer = billing_details.write(current_billable(), body["name"], body["address"])
    db.session.commit()  # the customer, when this made it
    return answer


@blp.route("/subscription/tax-ids", methods=["POST"])
@subscription_route(WRITE, keyed=True)
@blp.arguments(TaxIdRequestSchema)
@blp.response(201, TaxIdSchema, headers=NO_STORE)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def add_tax_id(body):
    """Add a tax id (Stripe's types: ``eu_vat``, ``gb_vat``, ``us_ein``, ``au_abn``, ...) to the user's customer.

    422 ``invalid_tax_id`` when Stripe refuses the type or the value's format. ``idempotent`` commits.
    """
    return billing_details.add_tax_id(current_billable(), body["type"], body["value"]), 201


@blp.route("/subscription/tax-ids/<string:tax_id>", methods=["DELETE"])
@subscription_route(WRITE, no_store=False)
@blp.response(204)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def delete_tax_id(tax_id):
    """Delete one of the user's tax ids at Stripe; another customer's, or an unknown one, is 404 ``not_found``."""
    billing_details.delete_tax_id(current_billable(), tax_id)
    return ""

