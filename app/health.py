"""``GET /health`` (liveness: the database answers) and ``GET /health/ready`` (everything configured answers).

``/health`` stays one ``SELECT 1`` for load balancers polling often; ``/health/ready`` also asks the
rate-limit store (when it is not the in-process ``memory://``) and the SMTP server (when
``MAIL_SERVER`` is set), for deploys and orchestrators that route traffic only to a ready instance.
"""
import logging

from flask import current_app
from marshmallow import Schema, fields
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.api import Blueprint
from app.errors import ServiceUnavailable
from app.extensions import db, limiter
from app.notifications.channels import EmailChannel

log = logging.getLogger(__name__)
blp = Blueprint("health", __name__, description="Liveness and readiness")


class HealthSchema(Schema):
    status = fields.String(required=True, metadata={"example": "ok"})


class ReadySchema(HealthSchema):
    checks = fields.Dict(keys=fields.String(), values=fields.String(), required=True,
                         metadata={"example": {"database": "ok", "rate_limit_store": "ok", "smtp": "ok"}})


def check_database():
    """Raise unless ``SELECT 1`` succeeds (the transaction is rolled back on failure)."""
    try:
        db.session.execute(text("SELECT 1"))
    except SQLAlchemyError:
        db.session.rollback()
        raise


def check_rate_limit_store():
    """Raise unless the rate-limit store (Redis in production) answers a ping."""
    if not limiter.storage.check():
        raise ConnectionError("the rate-limit store did not answer")


def check_smtp():
    """Raise unless the email channel opens an SMTP session as it sends (TLS, login; nothing sent)."""
    EmailChannel(current_app.config).check()


def configured_checks(config):
    """Return ``{name: check}`` of the parts this configuration uses."""
    checks = {"database": check_database}
    if not config["RATELIMIT_STORAGE_URI"].startswith("memory://"):
        checks["rate_limit_store"] = check_rate_limit_store
    if config["MAIL_SERVER"]:
        checks["smtp"] = check_smtp
    return checks


@blp.route("/health", methods=["GET"])
@blp.response(200, HealthSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def health():
    """Answer ``{"status": "ok"}`` when ``SELECT 1`` succeeds; 503 ``service_unavailable`` otherwise."""
    try:
        check_database()
    except SQLAlchemyError:
        log.warning("health check: database unreachable", exc_info=True)
        raise ServiceUnavailable("The database is not answering.") from None
    return {"status": "ok"}


@blp.route("/health/ready", methods=["GET"])
@blp.response(200, ReadySchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def ready():
    """Answer ``{"status": "ok", "checks": {name: "ok"}}`` when every configured part answers.

    Otherwise 503 ``service_unavailable`` with ``details.checks`` giving each check's result: ``ok``
    or ``unavailable (<error class>)``; the message names the failing ones. Parts: ``database``,
    ``rate_limit_store`` (unless ``memory://``), ``smtp`` (when ``MAIL_SERVER`` is set).
    """
    results = {}
    for name, check in configured_checks(current_app.config).items():
        try:
            check()
        except Exception as exc:  # noqa: BLE001 -- any failure of a part means "not ready", and says which
            log.warning("readiness check %s failed: %s", name, type(exc).__name__, exc_info=True)
            results[name] = f"unavailable ({type(exc).__name__})"
        else:
            results[name] = "ok"
    failing = [name for name, result in results.items() if result != "ok"]
    if failing:
        raise ServiceUnavailable(f"Not ready: {', '.join(failing)} not answering.", details={"checks": results})
    return {"status": "ok", "checks": results}
