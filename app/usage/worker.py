"""The usage delivery worker's loop (``flask deliver-usage``): batches of ``app.usage.delivery`` until stopped.

A ``once`` run (cron, a deploy step) delivers what it can claim now and exits. It waits out the
back-off of the events it retried itself, but never the lease of another worker's events: that
worker delivers them, and waiting for its lease (10 minutes) would only hold this run up to the
longest back-off (5 minutes) for nothing (issue 43, "Operators").
"""
import logging
import time
from collections import Counter

from sqlalchemy import func, select
from sqlalchemy.exc import SQLAlchemyError

from app.errors import AppError
from app.extensions import db
from app.models import UsageEvent
from app.models.usage import PENDING
from app.timeutil import utcnow
from app.usage.delivery import MAX_RETRY_DELAY, Pacer, deliver_batch, prune

logger = logging.getLogger(__name__)

PRUNE_EVERY = 3600.0
# The shortest wait of a ``once`` run for its own retry: no busy loop on one just due.
_LEAST_WAIT = 0.05


def own_retries_due_in(waiting):
    """Seconds until the earliest of this run's own retries is due (0 if one is), or ``None`` when none waits.

    ``waiting`` (``{event id: next_attempt_at}``, UTC, as this run set them on a retry) is narrowed in
    place to the events still pending at that time: one delivered since, or whose ``next_attempt_at``
    moved later (another worker claimed it: its lease), is no longer this run's to wait for.
    """
    if not waiting:
        return None
    rows = db.session.execute(select(UsageEvent.id, UsageEvent.next_attempt_at)
                              .where(UsageEvent.id.in_(list(waiting)), UsageEvent.status == PENDING)).all()
    mine = {event_id: due for event_id, due in rows if due <= waiting[event_id]}
    waiting.clear()
    waiting.update(mine)
    return None if not mine else max(0.0, (min(mine.values()) - utcnow()).total_seconds())


def pending_count():
    """How many events are pending (due, leased by a worker or waiting out a back-off)."""
    return db.session.scalar(select(func.count()).select_from(UsageEvent).where(UsageEvent.status == PENDING))


def _idle_wait(once, poll, waiting):
    """How long an idle loop waits; ``None`` ends a ``once`` run (none of its own retries is left)."""
    if not once:
        return poll
    due_in = own_retries_due_in(waiting)
    return None if due_in is None else min(max(due_in, _LEAST_WAIT), MAX_RETRY_DELAY)


def run(provider, config, once, stop, poll=1.0):
    """Deliver batches until ``stop`` (an ``app.stopping.Stop`` or a ``threading.Event``) is set; return a
    ``Counter`` of outcomes.

    ``once``: until nothing is left that this run can claim, waiting out its own retries (see the module
    docstring). Delivered events past ``USAGE_RETENTION_DAYS`` are pruned at the start and hourly. A
    database or provider error ends a ``once`` run; a long-running worker logs it and tries again after
    ``poll`` seconds.
    """
    totals, pacer, pruned_at, waiting = Counter(), Pacer(config["USAGE_DELIVERY_RATE"]), None, {}
    while not stop.is_set():
        if pruned_at is None or time.monotonic() - pruned_at >= PRUNE_EVERY:
            prune(config["USAGE_RETENTION_DAYS"])
            db.session.commit()
            pruned_at = time.monotonic()
        try:
            outcomes, retried = deliver_batch(provider, pacer)
        except (SQLAlchemyError, AppError):
            db.session.rollback()
            if once:
                raise
            logger.exception("usage delivery: error; trying again in %s s", poll)
            outcomes, retried = None, {}
        totals.update(outcomes or {})
        if once:  # a long-running worker waits for nothing in particular
            waiting.update(retried)
        if not outcomes:
            wait = _idle_wait(once, poll, waiting)
            if wait is None:
                break
            stop.wait(wait)
    return totals
