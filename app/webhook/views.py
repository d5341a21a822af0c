"""``POST /provider/webhook``: the billing part's own controller (SPEC 4 rule 5)."""
from flask import request
from marshmallow import Schema, fields

from app import jsonbody
from app.api import Blueprint
from app.extensions import db
from app.observability import annotate
from app.webhook import failures, service

blp = Blueprint("webhook", __name__, description="Signed provider events")


class ReceivedSchema(Schema):
    received = fields.Boolean(required=True, metadata={"example": True})


@blp.route("/provider/webhook", methods=["POST"])
@blp.doc(
    requestBody={
        "required": True,
        "description": "The raw Stripe event, signed in the Stripe-Signature header",
        "content": {"application/json": {"schema": {"type": "object"}}},
    },
    parameters=[{"in": "header", "name": "Stripe-Signature", "required": True, "schema": {"type": "string"}}],
)
@blp.response(200, ReceivedSchema)
@blp.alt_response(400, response="BAD_REQUEST")
@blp.alt_response(415, response="UNSUPPORTED_MEDIA_TYPE")
@blp.alt_response(500, response="INTERNAL_SERVER_ERROR")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def receive():
    """Verify, record and apply one provider event in one transaction.

    200 ``{"received": true}`` also for duplicates, unknown customers, ignored types and events of
    the other mode (``PROVIDER_LIVEMODE``); 400 ``invalid_signature`` / ``invalid_json`` /
    ``invalid_payload`` and 415 ``unsupported_media_type`` with nothing stored; 5xx when processing
    failed, so the provider retries (for up to three days, SPEC 6 rule 8), and the failure is kept
    in the failed-event ledger.
    """
    payload = jsonbody.require_json(request)
    event = service.read_delivery(payload, request.headers.get("Stripe-Signature"))
    with failures.recorded(event, payload.decode()):
        outcome = service.process_event(event)
        db.session.commit()
    annotate(webhook_outcome=outcome)
    return {"received": True}
