"""``GET /health``: 200 when the database answers, else 503 (for load balancers and uptime checks)."""
import logging

from marshmallow import Schema, fields
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.api import Blueprint
from app.errors import ServiceUnavailable
from app.extensions import db

log = logging.getLogger(__name__)
blp = Blueprint("health", __name__, description="Liveness and database reachability")


class HealthSchema(Schema):
    status = fields.String(required=True, metadata={"example": "ok"})


@blp.route("/health", methods=["GET"])
@blp.response(200, HealthSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def health():
    """Answer ``{"status": "ok"}`` when ``SELECT 1`` succeeds; 503 ``service_unavailable`` otherwise."""
    try:
        db.session.execute(text("SELECT 1"))
    except SQLAlchemyError:
        log.warning("health check: database unreachable", exc_info=True)
        db.session.rollback()
        raise ServiceUnavailable("The database is not answering.") from None
    return {"status": "ok"}
