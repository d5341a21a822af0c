"""Accepting usage reports: one batch validated whole, stored in one statement (CONTRACT "Usage-based billing").

The ledger is written before the answer: ``202`` means the events are in the database and the
delivery worker (``app.usage.delivery``) will bring each to Stripe exactly once. The identifier is
the idempotency key: ``INSERT ... ON CONFLICT (identifier) DO NOTHING`` stores only the new ones in
one statement, whichever request (or host) saw an identifier first, so a retried batch counts its
repeats as duplicates and stores nothing twice.
"""
import time

from sqlalchemy.dialects import postgresql, sqlite

from app.errors import AppError
from app.extensions import db
from app.models import UsageEvent
from app.models.usage import PENDING
from app.observability import metrics
from app.timeutil import utcnow
from app.usage import customers, meters


class UnknownMeter(AppError):
    """422 ``unknown_meter``: an ``event_name`` no active meter at Stripe has; ``details`` by index."""

    status = 422
    code = "unknown_meter"
    message = "No active meter at Stripe has this event_name."


class NoCustomer(AppError):
    """422 ``no_customer``: the user or organisation has no Stripe customer yet; ``details`` by index."""

    status = 422
    code = "no_customer"
    message = "The customer has no Stripe customer yet: nothing can be billed to it."


def _ref(event):
    kind, ref_id = next(iter(event["customer"].items()))
    return kind, ref_id


def _check_meters(events):
    active = meters.active({event["event_name"] for event in events})
    unknown = {f"events.{i}.event_name": [f"No active meter has event_name {event['event_name']!r}."]
               for i, event in enumerate(events) if event["event_name"] not in active}
    if unknown:
        raise UnknownMeter(details=unknown)


def _resolve_customers(events):
    found = customers.stripe_customers({_ref(event) for event in events})
    missing = {f"events.{i}.customer": [f"{_ref(event)[0].title()} {_ref(event)[1]} has no Stripe customer."]
               for i, event in enumerate(events) if not found[_ref(event)]}
    if missing:
        raise NoCustomer(details=missing)
    return found


def _insert(rows):
    """``INSERT ... ON CONFLICT (identifier) DO NOTHING RETURNING id``; return how many rows were new.

    Sent as one executemany, which SQLAlchemy batches into multi-row ``INSERT`` statements
    ("insertmanyvalues") from one cached compilation: a literal 100-row ``VALUES`` was compiled
    afresh per request, the better part of a batch's time.
    """
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    statement = dialect.insert(UsageEvent).on_conflict_do_nothing(index_elements=["identifier"]).returning(
        UsageEvent.id)
    return len(db.session.execute(statement, rows).all())


def accept(events, service_key_id):
    """Store a validated batch; return ``{"accepted", "duplicates"}``. The caller commits.

    ``events`` are ``UsageEventSchema`` loads. Raises ``UnknownMeter`` or ``NoCustomer`` (422, with
    ``details`` by index) and stores nothing; ``ProviderUnavailable`` when the meters cannot be read.
    """
    _check_meters(events)
    found = _resolve_customers(events)
    now, stamp = utcnow(), int(time.time())
    rows = {}
    for event in events:  # an identifier repeated within the batch is a duplicate too
        rows.setdefault(event["identifier"], {
            "identifier": event["identifier"], "event_name": event["event_name"], "customer": found[_ref(event)],
            "value": event["value"], "timestamp": event["timestamp"] or stamp, "service_key_id": service_key_id,
            "status": PENDING, "attempts": 0, "next_attempt_at": now, "created_at": now})
    accepted = _insert(list(rows.values()))
    metrics.usage_events("accepted", accepted)
    metrics.usage_events("duplicate", len(events) - accepted)
    return {"accepted": accepted, "duplicates": len(events) - accepted}


def record(identifier, event_name, customer, value):
    """Store one meter event the service itself derived (a metered quota's consume), as ``accept`` stores a
    report: in the caller's transaction, once per ``identifier``; return whether it was new. No Stripe call:
    the meter's ``event_name`` was checked when ``PLAN_FEATURES`` named it, and delivery refuses an unknown one
    (the event is then ``failed``, listed by ``flask usage-events --failed``)."""
    now = utcnow()
    new = _insert([{"identifier": identifier, "event_name": event_name, "customer": customer, "value": value,
                    "timestamp": int(time.time()), "service_key_id": None, "status": PENDING, "attempts": 0,
                    "next_attempt_at": now, "created_at": now}])
    metrics.usage_events("accepted", new)
    return bool(new)

