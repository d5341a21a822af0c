"""Entitlement endpoints (CONTRACT "Additions (sixth round)", "Entitlements"): thin views over ``service``.

Reads take a user's bearer token; checks, consumes and reservations a service key with
``entitlements:check`` (a user's token: ``403 insufficient_scope``). Fail closed: a database that
cannot answer is ``503``, never an ``allowed: true``. ``/metrics`` counts checks by outcome and times what takes
units (one counter increment and one observation a request: nothing measurable on the hot path).
"""
from contextlib import contextmanager, nullcontext
from functools import wraps
from time import perf_counter

from flask import g
from sqlalchemy.exc import SQLAlchemyError

from app.api import Blueprint
from app.auth.bearer import ability_required, auth_required
from app.entitlements import fast, service, summary
from app.entitlements.errors import UnknownFeature, ledger_unavailable
from app.entitlements.schemas import (
    CheckAnswerSchema,
    CheckSchema,
    EntitlementsSchema,
    ReservationRequestSchema,
    ReservationSchema,
    SettledSchema,
    SettleSchema,
)
from app.errors import ServiceUnavailable
from app.extensions import db
from app.http import NO_STORE, no_store
from app.models import User
from app.observability import metrics
from app.organizations import access
from app.timeutil import utcnow
from app.usage.keys import service_key_required

blp = Blueprint("entitlements", __name__, description="What a customer may do, and how much of a quota is left")
CHECK = "entitlements:check"
_ANSWER = CheckAnswerSchema()


def fail_closed(view):
    """Answer ``503`` when the database fails anywhere in the request (the key's check included): no answer is
    given, and nothing is taken, without the ledger."""
    @wraps(view)
    def wrapper(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except SQLAlchemyError:
            db.session.rollback()
            raise ledger_unavailable() from None
    return wrapper


def counted(view):
    """Count the checks ``view`` refuses in ``entitlement_checks_total``: ``unknown_feature`` (422) and
    ``unavailable`` (503, from ``fail_closed`` below it); the view counts the answers it gives."""
    @wraps(view)
    def wrapper(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except UnknownFeature:
            metrics.entitlement_check("unknown_feature")
            raise
        except ServiceUnavailable:
            metrics.entitlement_check("unavailable")
            raise
    return wrapper


@contextmanager
def timed(operation):
    """Observe the block's seconds in ``entitlement_consume_duration_seconds{operation}``, whatever its answer
    (a refusal or a 503 too): the key check and parsing before it are in ``http_request_duration_seconds``."""
    started = perf_counter()
    try:
        yield
    finally:
        metrics.entitlement_consume(operation, perf_counter() - started)


@blp.route("/entitlements", methods=["GET"])
@fail_closed
@auth_required
@ability_required("subscription:read")
@blp.response(200, EntitlementsSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def show():
    """The caller's plan, features and quotas (used, reserved, remaining, reset) and ``as_of``."""
    return summary.features(db.session.get(User, g.current_user.id), utcnow())


@blp.route("/organizations/<string:organization_id>/entitlements", methods=["GET"])
@fail_closed
@auth_required
@ability_required("subscription:read")
@blp.response(200, EntitlementsSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def show_organization(organization_id):
    """The organisation's plan, features and quotas, as ``GET /entitlements``: any member (else ``404``)."""
    return summary.features(access.membership(organization_id, g.current_user).organization, utcnow())


def one_round_trip(view):
    """Take a consume in one statement when this worker's copies of the key and the customer allow it
    (``app.entitlements.fast``: PostgreSQL), else run ``view``, whose reads refresh the copies. The time observed
    then includes the key's check and the body's parsing, which that statement does with the take."""
    @wraps(view)
    def wrapper(*args, **kwargs):
        if not fast.enabled():
            return view(*args, **kwargs)
        started = perf_counter()
        answer = fast.consume(utcnow(), CHECK)
        if answer is None:
            return view(*args, **kwargs)
        metrics.entitlement_consume("consume", perf_counter() - started)
        metrics.entitlement_check("allowed")
        return _ANSWER.dump(answer)
    return wrapper


@blp.route("/entitlements/check", methods=["POST"])
@counted
@fail_closed
@no_store
@one_round_trip
@service_key_required(CHECK)
@blp.arguments(CheckSchema)
@blp.response(200, CheckAnswerSchema, headers=NO_STORE)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def check(body):
    """Whether ``required`` units of ``feature`` are allowed; with ``consume``, take them if all fit, exactly once by
    ``identifier`` (a repeat returns the first answer). Refused: ``200`` with ``allowed: false``, nothing taken."""
    with timed("consume") if body["consume"] else nullcontext():
        now = utcnow()
        snapshot = service.snapshot_of(body["customer"], now)
        answer, repeated = service.check(snapshot, body["feature"], body["required"], body["consume"],
                                         body.get("identifier"), now)
        db.session.commit()
    fast.remember_key(g.service_key, g.service_key_used_at)
    fast.remember_billable(*next(iter(body["customer"].items())), snapshot)
    metrics.entitlement_check("duplicate" if repeated else "allowed" if answer["allowed"] else "denied")
    return answer


@blp.route("/entitlements/reservations", methods=["POST"])
@fail_closed
@no_store
@service_key_required(CHECK)
@blp.arguments(ReservationRequestSchema)
@blp.response(201, ReservationSchema, headers=NO_STORE)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def reserve(body):
    """Hold ``amount`` units of a quota for ``ttl`` seconds (``409 quota_exceeded`` when fewer are left)."""
    with timed("reserve"):
        now = utcnow()
        answer = service.reserve(service.snapshot_of(body["customer"], now), body["feature"], body["amount"],
                                 body["identifier"], body["ttl"], now)
        db.session.commit()
    return answer


@blp.route("/entitlements/reservations/<string:reservation_id>/settle", methods=["POST"])
@fail_closed
@no_store
@service_key_required(CHECK)
@blp.arguments(SettleSchema)
@blp.response(200, SettledSchema, headers=NO_STORE)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def settle(body, reservation_id):
    """Consume ``amount`` of the reserved units and return the rest (``409`` once released or expired)."""
    with timed("settle"):
        answer = service.settle(reservation_id, body["amount"], utcnow())
        db.session.commit()
    return answer


@blp.route("/entitlements/reservations/<string:reservation_id>", methods=["DELETE"])
@fail_closed
@no_store
@service_key_required(CHECK)
@blp.response(204, headers=NO_STORE)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def release(reservation_id):
    """Return every reserved unit; an expired reservation has returned itself (``409`` once settled)."""
    service.release(reservation_id, utcnow())
    db.session.commit()
