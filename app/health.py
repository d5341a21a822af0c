"""``GET /health`` (liveness: the database answers) and ``GET /health/ready`` (everything configured answers).

``/health`` stays one ``SELECT 1`` for load balancers polling often; ``/health/ready`` also asks the
rate-limit store (when it is not the in-process ``memory://``) and the SMTP server (when
``MAIL_SERVER`` is set), for deploys and orchestrators that route traffic only to a ready instance.

A failing part is logged as one line naming it, where it is (host and port, or the SQLite file)
and why (the errno's name and text when the system gave one), at most once a minute per process
for one cause: probes come every few seconds, and a traceback per probe buried the cause.
"""
import errno
import logging
import time
from urllib.parse import urlsplit

from flask import current_app
from marshmallow import Schema, fields
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from app.api import Blueprint
from app.errors import ServiceUnavailable
from app.extensions import db, limiter
from app.notifications.channels import EmailChannel
from app.usage.delivery import oldest_undelivered_age

log = logging.getLogger(__name__)
# Seconds before the same failure (part, place, cause) is logged again by one process.
LOG_EVERY_SECONDS = 60
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
    """Raise unless the rate-limit store (Redis in production) answers a read."""
    # A read of a key no limit uses, rather than the store's check(), which says only True or
    # False: its error carries the cause (connection refused, timed out) for the log.
    limiter.storage.get("health-check")


def check_smtp():
    """Raise unless the email channel opens an SMTP session as it sends (TLS, login; nothing sent)."""
    EmailChannel(current_app.config).check()


class UsageBacklog(RuntimeError):
    """The oldest usage event not yet at Stripe is older than ``USAGE_READY_MAX_AGE``."""


def check_usage_delivery():
    """Raise unless the oldest pending usage event is younger than ``USAGE_READY_MAX_AGE`` seconds.

    A worker that stopped, or Stripe refusing every attempt, shows here before invoices miss usage.
    """
    age, limit = oldest_undelivered_age(), current_app.config["USAGE_READY_MAX_AGE"]
    if age > limit:
        raise UsageBacklog(f"the oldest undelivered usage event is {int(age)} s old (limit {limit} s)")


def where(name, config):
    """Return where part ``name`` is: ``host:port``, or the SQLite file; never a password."""
    if name == "usage_delivery":
        return "the usage ledger"
    if name == "database":
        url = db.engine.url
        return url.database if url.get_backend_name() == "sqlite" else f"{url.host}:{url.port or 5432}"
    if name == "rate_limit_store":
        uri = urlsplit(config["RATELIMIT_STORAGE_URI"])
        return f"{uri.hostname}:{uri.port}" if uri.port else uri.hostname
    return f"{config['MAIL_SERVER']}:{config['MAIL_PORT']}"


def cause(error):
    """Return why ``error`` happened in a few words: the errno in its chain, else its deepest error's first line."""
    chain = []
    while error is not None and all(error is not seen for seen in chain):
        chain.append(error)
        # SQLAlchemy keeps the driver's error in ``orig``; the others chain theirs.
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__
    for link in chain:
        if isinstance(link, OSError) and link.errno:
            return f"{errno.errorcode.get(link.errno, link.errno)} ({link.strerror})"
    root = chain[-1]
    return f"{type(root).__name__}: {(str(root).strip().splitlines() or [''])[0]}"


def report_failure(name, error):
    """Log part ``name``'s failure as one line, unless this process logged the same one within a minute."""
    config = current_app.config
    line = f"{name} at {where(name, config)} unavailable: {cause(error)}"
    logged = current_app.extensions.setdefault("health_failures_logged", {})
    now = time.monotonic()
    if line not in logged or now - logged[line] >= LOG_EVERY_SECONDS:
        logged[line] = now
        log.warning("health check: %s", line)


def configured_checks(config):
    """Return ``{name: check}`` of the parts this configuration uses."""
    checks = {"database": check_database}
    if not config["RATELIMIT_STORAGE_URI"].startswith("memory://"):
        checks["rate_limit_store"] = check_rate_limit_store
    if config["MAIL_SERVER"]:
        checks["smtp"] = check_smtp
    if config["USAGE_READY_MAX_AGE"]:
        checks["usage_delivery"] = check_usage_delivery
    return checks


@blp.route("/health", methods=["GET"])
@blp.response(200, HealthSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def health():
    """Answer ``{"status": "ok"}`` when ``SELECT 1`` succeeds; 503 ``service_unavailable`` otherwise."""
    try:
        check_database()
    except SQLAlchemyError as exc:
        report_failure("database", exc)
        raise ServiceUnavailable("The database is not answering.") from None
    return {"status": "ok"}


@blp.route("/health/ready", methods=["GET"])
@blp.response(200, ReadySchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def ready():
    """Answer ``{"status": "ok", "checks": {name: "ok"}}`` when every configured part answers.

    Otherwise 503 ``service_unavailable`` with ``details.checks`` giving each check's result: ``ok``
    or ``unavailable (<error class>)``; the message names the failing ones. Parts: ``database``,
    ``rate_limit_store`` (unless ``memory://``), ``smtp`` (when ``MAIL_SERVER`` is set),
    ``usage_delivery`` (unless ``USAGE_READY_MAX_AGE`` is 0: the oldest undelivered usage event is
    younger than it).
    """
    results = {}
    for name, check in configured_checks(current_app.config).items():
        try:
            check()
        except Exception as exc:  # noqa: BLE001 -- any failure of a part means "not ready", and says which
            report_failure(name, exc)
            results[name] = f"unavailable ({type(exc).__name__})"
        else:
            results[name] = "ok"
    failing = [name for name, result in results.items() if result != "ok"]
    if failing:
        raise ServiceUnavailable(f"Not ready: {', '.join(failing)} not answering.", details={"checks": results})
    return {"status": "ok", "checks": results}
