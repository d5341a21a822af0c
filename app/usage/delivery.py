"""The usage delivery worker's work: claim pending events, send each to Stripe's meter events, record it.

Modelled on the notification outbox (``app.notifications.outbox``, STYLE "Usage and other
background work"): a claim is a short transaction that leases the rows (``FOR UPDATE SKIP LOCKED``
on PostgreSQL, so workers on several hosts never take one row at once); the sends happen outside
any transaction; the outcomes are committed together after the batch. A worker that dies between
Stripe's answer and that commit leaves its rows to be sent again when the lease ends, with the same
``identifier``: Stripe answers "already exists", which is recorded as delivered, so nothing is
billed twice (Stripe keeps identifiers unique for 24 hours, far longer than a lease).

Sends run on a few threads, paced to at most ``USAGE_DELIVERY_RATE`` per second per worker. A
network error, timeout, 429 or 5xx is retried after a back-off (1 s, doubling, at most 5 minutes),
for as long as it takes; any other refusal marks the event ``failed`` with Stripe's message, until
``flask usage-replay``. The loop that runs batches until stopped is ``app.usage.worker``.
"""
import logging
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from sqlalchemy import delete, func, select

from app.billing.call_costs import USAGE_DELIVERED_ON_DELETION
from app.billing.provider_errors import MeterEventRefused
from app.errors import AppError, Conflict
from app.extensions import db
from app.leases import lease_due
from app.models import UsageEvent
from app.models.usage import DELIVERED, FAILED, PENDING
from app.observability import metrics
from app.timeutil import utcnow
from app.usage import meters

logger = logging.getLogger(__name__)

BATCH = 200
SENDERS = 8
# Longer than a batch can take (BATCH sends, each at most a few timeouts, SENDERS at a time).
LEASE = timedelta(minutes=10)
FIRST_RETRY_DELAY = 1.0
MAX_RETRY_DELAY = 300.0
_ERROR_LENGTH = 1000


class Pacer:
    """At most ``rate`` sends per second across the threads of one worker: each waits for its slot."""

    def __init__(self, rate):
        self.interval, self.next_slot, self.lock = 1.0 / rate, time.monotonic(), threading.Lock()

    def wait(self):
        with self.lock:
            now = time.monotonic()
            slot = max(now, self.next_slot)
            self.next_slot = slot + self.interval
        time.sleep(max(0.0, slot - now))


def retry_delay(attempts):
    """Seconds to wait after failed attempt number ``attempts`` (1-based): 1, 2, 4... at most 300."""
    return min(FIRST_RETRY_DELAY * 2 ** (attempts - 1), MAX_RETRY_DELAY)


def claim(now, limit=BATCH):
    """Lease up to ``limit`` due pending events to the caller (``app.leases``); return them. The caller commits."""
    claimed = lease_due(UsageEvent, PENDING, now, limit, LEASE)
    if not claimed:
        return []
    return db.session.scalars(select(UsageEvent).where(UsageEvent.id.in_(claimed)).order_by(UsageEvent.id)
                              .execution_options(populate_existing=True)).all()


def _create(provider, event, meter):
    """Send one event to Stripe (its ``identifier`` the idempotency key: "already exists" counts as sent)."""
    customer_key, value_key = meters.payload_keys(meter)
    provider.create_meter_event(event.event_name, {customer_key: event.customer, value_key: str(event.value)},
                                event.identifier, event.timestamp)


def _attempt(provider, event, meter):
    """Send one event; return ``(outcome, message)``: ``delivered``, ``retry`` or ``failed``."""
    try:
        _create(provider, event, meter)
    except MeterEventRefused as exc:
        return "failed", str(exc)
    except AppError as exc:  # ProviderUnavailable: network, timeout, 429, 5xx
        return "retry", exc.message
    return "delivered", None


def _no_meter(event):
    return f"no active meter at Stripe has event_name {event.event_name!r}"


def _send(provider, pacer, event, meter):
    """``_attempt`` in its turn (``pacer``); return ``(outcome, message, when Stripe answered)``."""
    if meter is None:
        return "failed", _no_meter(event), utcnow()
    pacer.wait()
    return *_attempt(provider, event, meter), utcnow()


def record(event, outcome, message, now):
    """Record one attempt's outcome on ``event``. The caller commits."""
    event.attempts += 1
    if outcome == "delivered":
        event.status, event.delivered_at, event.last_error = DELIVERED, now, None
    elif outcome == "failed":
        event.status, event.last_error = FAILED, message[:_ERROR_LENGTH]
        logger.error("usage event %s (%s) failed: Stripe refused it: %s", event.id, event.identifier, message)
    else:
        event.last_error = message[:_ERROR_LENGTH]
        event.next_attempt_at = now + timedelta(seconds=retry_delay(event.attempts))
        logger.warning("usage event %s attempt %s failed, next at %s: %s", event.id, event.attempts,
                       event.next_attempt_at, message)
    if outcome != "retry":
        metrics.usage_events(outcome)


def deliver_batch(provider, pacer, limit=BATCH):
    """Claim one batch, send it, record the outcomes. Commits twice.

    Returns ``(Counter of outcomes, {event id: next_attempt_at (UTC)} of the events to retry)``.
    """
    batch = claim(utcnow(), limit)
    db.session.commit()
    if not batch:
        return Counter(), {}
    found = meters.active({event.event_name for event in batch})
    with ThreadPoolExecutor(min(SENDERS, len(batch))) as pool:
        results = list(pool.map(lambda event: _send(provider, pacer, event, found.get(event.event_name)), batch))
    for event, (outcome, message, answered_at) in zip(batch, results, strict=True):
        record(event, outcome, message, answered_at)
    db.session.commit()
    retried = {event.id: event.next_attempt_at for event, (outcome, _, _) in zip(batch, results, strict=True)
               if outcome == "retry"}
    return Counter(outcome for outcome, _, _ in results), retried


class UsagePending(Conflict):
    """409 ``usage_pending``: more accepted usage of the customer waits for delivery than a deletion sends itself
    (``USAGE_DELIVERED_ON_DELETION``, a bound on its Stripe calls: CONTRACT "Changes to the fifth round",
    "Deleting an account or an organisation bills its accepted usage" and "Bounded Stripe work")."""

    code = "usage_pending"

    @classmethod
    def waiting(cls, count):
        return cls(f"{count} usage events accepted for this customer are still being delivered to Stripe, to be "
                   "billed on its final invoice; delete it again in a minute, once they are delivered.",
                   details={"pending": count})


def _pending_of(customer):
    return select(UsageEvent).where(UsageEvent.customer == customer, UsageEvent.status == PENDING)


def refuse_backlog(customer):
    """Raise ``UsagePending`` (409) when more than ``USAGE_DELIVERED_ON_DELETION`` events of the Stripe customer
    ``customer`` are pending: called before a deletion's first Stripe call, so that it changes nothing."""
    count = db.session.scalar(select(func.count()).select_from(_pending_of(customer).subquery()))
    if count > USAGE_DELIVERED_ON_DELETION:
        raise UsagePending.waiting(count)


def deliver_for_deletion(provider, customer):
    """Deliver the customer's pending events now, before its subscription is cancelled with ``invoice_now``.

    At most ``USAGE_DELIVERED_ON_DELETION`` (``refuse_backlog`` refused more), oldest first, locked so that no
    worker claims them meanwhile; sent with their own identifiers, as the worker sends them, so one a
    worker sent too counts once. Stripe's refusal of an event marks it ``failed`` as the worker does;
    ``ProviderUnavailable`` (503) or ``ProviderRejected`` (502) propagate, so the caller deletes nothing.
    Stripe calls: the active meters (when not cached) and one per event. Returns how many were delivered.
    The caller commits.
    """
    events = db.session.scalars(_pending_of(customer).order_by(UsageEvent.id).limit(USAGE_DELIVERED_ON_DELETION)
                                .with_for_update()).all()
    if not events:
        return 0
    found = meters.active({event.event_name for event in events})
    for event in events:
        meter = found.get(event.event_name)
        if meter is None:
            record(event, "failed", _no_meter(event), utcnow())
            continue
        try:
            _create(provider, event, meter)
        except MeterEventRefused as exc:
            record(event, "failed", str(exc), utcnow())
        else:
            record(event, "delivered", None, utcnow())
    return sum(event.status == DELIVERED for event in events)


def oldest_undelivered_age():
    """Age in seconds of the oldest pending event (0 when none)."""
    oldest = db.session.scalar(select(func.min(UsageEvent.created_at)).where(UsageEvent.status == PENDING))
    return 0.0 if oldest is None else max(0.0, (utcnow() - oldest).total_seconds())


def prune(retention_days):
    """Delete delivered events (and so their identifiers) older than ``retention_days``; return how many."""
    cutoff = utcnow() - timedelta(days=retention_days)
    return db.session.execute(delete(UsageEvent).where(UsageEvent.status == DELIVERED,
                                                       UsageEvent.delivered_at < cutoff)).rowcount
