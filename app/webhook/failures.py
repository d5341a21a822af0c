"""The failed-event ledger: provider events whose processing failed, until a later attempt succeeds.

A failed delivery is rolled back whole (CONTRACT "Webhook processing") and answered 5xx, so the
provider retries, but only for three days (SPEC 6 rule 8). The ledger keeps what an operator
needs to see the failure and to replay the event afterwards (``flask webhook-events``,
``flask webhook-replay``), as dj-stripe keeps its failed events.
"""
import functools
import logging
from contextlib import contextmanager
from datetime import timedelta

from sqlalchemy import bindparam, delete, exists, func, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from app.billing import objects
from app.extensions import db
from app.models import FailedWebhookEvent, WebhookEvent
from app.timeutil import utcnow

log = logging.getLogger(__name__)

_DIALECT_INSERT = {"postgresql": postgresql_insert, "sqlite": sqlite_insert}
# Enough for any exception's first line; a longer one is cut rather than refused.
MESSAGE_LENGTH = 1000

_FAILED = FailedWebhookEvent.__table__
# Text, so that the webhook's ledger insert can carry it in its WITH on PostgreSQL (``service.record``).
RESOLVE_SQL = f"UPDATE {_FAILED.name} SET resolved_at = :now WHERE id = :id AND resolved_at IS NULL"
_RESOLVE = text(RESOLVE_SQL).bindparams(bindparam("now", type_=_FAILED.c.resolved_at.type))


@contextmanager
def recorded(event, payload):
    """Run the block (an event's processing and its commit); when it raises, record the failure, re-raise.

    ``event`` is the verified event dict, ``payload`` its raw body (text). The failure is written
    after the rollback, in a transaction of its own, so it survives the failure it describes.
    When the database cannot take that write either, the failure is logged and the original
    error still propagates (answered 5xx, so the provider retries).
    """
    try:
        yield
    except Exception as exc:
        db.session.rollback()
        try:
            record_failure(event, payload, exc)
        except Exception:
            log.exception("could not record the failure of event %s", event["id"])
        raise


def error_message(exc):
    """Return the first line of the exception's message, cut to ``MESSAGE_LENGTH`` characters.

    The first line only: SQLAlchemy appends the statement and its parameters on the lines after.
    """
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else "")[:MESSAGE_LENGTH]


@functools.cache
def _upsert(dialect_name):
    insert = _DIALECT_INSERT[dialect_name](_FAILED)
    return insert.on_conflict_do_update(index_elements=[_FAILED.c.id], set_={
        "attempts": _FAILED.c.attempts + 1,
        "error_class": insert.excluded.error_class,
        "error_message": insert.excluded.error_message,
        "last_failed_at": insert.excluded.last_failed_at,
        "resolved_at": insert.excluded.resolved_at,
    })


def record_failure(event, payload, exc):
    """Record (or count again) a failed attempt at ``event`` in a transaction of its own; commit it.

    An event that another delivery has meanwhile processed is recorded as resolved already.
    """
    now = utcnow()
    with db.engine.begin() as connection:
        processed = connection.scalar(select(exists().where(WebhookEvent.id == event["id"])))
        connection.execute(_upsert(connection.dialect.name).values(
            id=event["id"], type=event["type"], customer=objects.customer_id_of(event["data"]["object"]),
            payload=payload, error_class=type(exc).__name__, error_message=error_message(exc), attempts=1,
            first_failed_at=now, last_failed_at=now, resolved_at=now if processed else None))
    log.warning("event %s (%s) failed: %s: %s", event["id"], event["type"], type(exc).__name__, error_message(exc))


def resolve(event_id):
    """Mark the event's failure record resolved, in the caller's transaction (no record: no change)."""
    db.session.connection().execute(_RESOLVE, {"id": event_id, "now": utcnow()})


def count_open():
    """Return how many failure records are unresolved (``webhook_failed_events_open``, read at each scrape)."""
    return db.session.scalar(
        select(func.count()).select_from(FailedWebhookEvent).where(FailedWebhookEvent.resolved_at.is_(None)))


def failed_events(open_only=True):
    """Return the failure records, the most recent failure first; only unresolved ones by default."""
    query = select(FailedWebhookEvent).order_by(FailedWebhookEvent.last_failed_at.desc(), FailedWebhookEvent.id)
    if open_only:
        query = query.where(FailedWebhookEvent.resolved_at.is_(None))
    return db.session.scalars(query).all()


def prune(retention_days):
    """Delete resolved records resolved more than ``retention_days`` days ago; return how many.

    Unresolved records are kept whatever their age: they still need an operator.
    """
    cutoff = utcnow() - timedelta(days=retention_days)
    result = db.session.execute(delete(FailedWebhookEvent).where(FailedWebhookEvent.resolved_at < cutoff))
    return result.rowcount
