"""``POST /provider/webhook``: the billing part's own controller (SPEC 4 rule 5)."""
from flask import request
from flask_smorest import Blueprint
from marshmallow import Schema, fields

from app.extensions import db
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
@blp.alt_response(500, response="INTERNAL_SERVER_ERROR")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def receive():
    """Verify, record and apply one provider event in one transaction.

    200 ``{"received": true}`` also for duplicates, unknown customers, ignored types and events of
    the other mode (``PROVIDER_LIVEMODE``); 400 ``invalid_signature`` / ``invalid_payload`` with
    nothing stored; 5xx when processing failed, so the provider retries (for up to three days,
    SPEC 6 rule 8), and the failure is kept in the failed-event ledger.
    """
    payload = request.get_data(cache=False)
    event = service.read_delivery(payload, request.headers.get("Stripe-Signature"))
    with failures.recorded(event, payload.decode()):
        service.process_event(event)
        db.session.commit()
    return {"received": True}
