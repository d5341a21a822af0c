"""The delivery worker's work: claim due outbox rows, send each on its channel, record the outcome.

Delivery is at least once. A claim is a short transaction that leases the rows (moves their
``next_attempt_at`` forward by ``LEASE``); sending happens outside any transaction, so no lock is
held across the network; each outcome is then committed on its own. A worker that dies between
a send and its commit leaves the row to be sent again when the lease ends: receivers drop the
repeat by its stable id (email ``Message-ID``, ``webhook-id``).
"""
import logging
from collections import Counter
from contextlib import ExitStack
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.exc import SQLAlchemyError

from app.extensions import db
from app.leases import lease_due
from app.models import Notification, NotificationDelivery, PasswordResetRequest, User
from app.models.delivery import DEAD, DELIVERED, PENDING
from app.notifications import notify_account
from app.observability import metrics
from app.timeutil import utcnow

logger = logging.getLogger(__name__)

BATCH = 20
# Longer than a batch can take (BATCH sends of channels.SEND_TIMEOUT each, with room to spare), so
# a live worker's rows are never taken by another.
LEASE = timedelta(minutes=10)
MAX_RETRY_DELAY = timedelta(hours=6)
# How often an idle worker looks for due rows, seconds.
POLL_SECONDS = 1.0
_ERROR_LENGTH = 1000


def retry_delay(attempts, first_delay):
    """Return the wait after failed attempt number ``attempts`` (1-based): ``first_delay`` seconds
    times 4 per further attempt, at most ``MAX_RETRY_DELAY`` (the defaults give 1 min, 4, 16, 64 min,
    4.3 h, then 6 h: about 17 hours from the first attempt to the eighth)."""
    return min(timedelta(seconds=first_delay * 4 ** (attempts - 1)), MAX_RETRY_DELAY)


def _with_notification():
    return (select(NotificationDelivery, Notification, User)
            .join(Notification, NotificationDelivery.notification_id == Notification.id)
            .join(User, Notification.user_id == User.id))


def claim(now, limit=BATCH):
    """Lease up to ``limit`` due deliveries to the caller (``app.leases``, workers side by side on
    PostgreSQL, one row to one worker on both databases); return ``[(delivery, notification, user)]``.
    The caller commits, which ends the claim's transaction.
    """
    claimed = lease_due(NotificationDelivery, PENDING, now, limit, LEASE)
    if not claimed:
        return []
    return db.session.execute(
        _with_notification().where(NotificationDelivery.id.in_(claimed))
        .order_by(NotificationDelivery.id)
        .execution_options(populate_existing=True)).tuples().all()


def expand_reset_requests(limit=BATCH):
    """Turn up to ``limit`` waiting ``POST /auth/password/forgot`` requests into reset emails; return how many.

    A request for a registered address queues a ``password_reset`` email to its user; any other is
    dropped, as each row is once read. Done here, off the request, so that the request costs the
    same for every address. ``SKIP LOCKED`` lets PostgreSQL workers take requests side by side.
    The caller commits.
    """
    requests = db.session.scalars(
        select(PasswordResetRequest).order_by(PasswordResetRequest.id).limit(limit)
        .with_for_update(skip_locked=True)).all()
    if not requests:
        return 0
    addresses = {request.email for request in requests}
    users = {user.email: user for user in db.session.scalars(select(User).where(User.email.in_(addresses)))}
    for request in requests:
        if request.email in users:
            notify_account(users[request.email], "password_reset")
        db.session.delete(request)
    return len(requests)


def record(delivery, error, now, max_attempts, first_delay):
    """Record one attempt's outcome on ``delivery``: delivered, retry later, or dead; return which.

    ``error`` is ``None`` for a delivery. The caller commits.
    """
    delivery.attempts += 1
    if error is None:
        delivery.status, delivery.delivered_at, delivery.last_error = DELIVERED, now, None
        metrics.notification_sent(delivery.channel)
        return "delivered"
    delivery.last_error = f"{error.__class__.__name__}: {error}"[:_ERROR_LENGTH]
    if delivery.attempts >= max_attempts:
        delivery.status = DEAD
        metrics.notification_dead(delivery.channel)
        logger.error("notification delivery %s (%s) is dead after %s attempts: %s", delivery.id, delivery.channel,
                     delivery.attempts, delivery.last_error)
        return "dead"
    delivery.next_attempt_at = now + retry_delay(delivery.attempts, first_delay)
    logger.warning("notification delivery %s (%s) attempt %s failed, next at %s: %s", delivery.id,
                   delivery.channel, delivery.attempts, delivery.next_attempt_at, delivery.last_error)
    return "retry"


def _send(delivery, notification, user, channels, sessions, stack):
    channel = channels.get(delivery.channel)
    if channel is None:
        raise LookupError(f"the {delivery.channel} channel is not configured")
    if delivery.channel not in sessions:
        sessions[delivery.channel] = stack.enter_context(channel.opened())
    sessions[delivery.channel].send(notification, user, utcnow())


def deliver_batch(channels, config):
    """Claim one batch and send it on ``channels`` (``{name: channel}``); return a ``Counter`` of outcomes.

    Waiting password reset requests are expanded into emails first, in the claim's transaction.
    Commits: the claim first, then each outcome as soon as it is known.
    """
    expand_reset_requests()
    batch = claim(utcnow())
    db.session.commit()
    outcomes, sessions = Counter(), {}
    with ExitStack() as stack:
        for delivery, notification, user in batch:
            try:
                _send(delivery, notification, user, channels, sessions, stack)
                error = None
            except Exception as exc:  # a failed send is that attempt's outcome, never the worker's end
                error = exc
            outcomes[record(delivery, error, utcnow(), config["NOTIFY_MAX_ATTEMPTS"],
                            config["NOTIFY_RETRY_DELAY"])] += 1
            db.session.commit()
    return outcomes


def dead_deliveries():
    """Return ``[(delivery, notification, user)]`` of the dead deliveries, oldest first."""
    return db.session.execute(
        _with_notification().where(NotificationDelivery.status == DEAD)
        .order_by(NotificationDelivery.id)).tuples().all()


def retry_dead(now):
    """Queue every dead delivery again with a fresh attempt count; return how many. The caller commits."""
    return db.session.execute(
        update(NotificationDelivery).where(NotificationDelivery.status == DEAD)
        .values(status=PENDING, attempts=0, next_attempt_at=now)
        .execution_options(synchronize_session=False)).rowcount


def run(channels, config, once, stop, poll=POLL_SECONDS):
    """Deliver batches until ``stop`` (an ``app.stopping.Stop`` or a ``threading.Event``) is set; with ``once``,
    until none is due.

    Returns a ``Counter`` of outcomes. Between empty batches it waits ``poll`` seconds. A database
    error ends a ``once`` run; a long-running worker logs it and tries again after ``poll``.
    """
    totals = Counter()
    while not stop.is_set():
        try:
            outcomes = deliver_batch(channels, config)
        except SQLAlchemyError:
            db.session.rollback()
            if once:
                raise
            logger.exception("notification delivery: database error; trying again in %s s", poll)
            outcomes = None
        totals.update(outcomes or {})
        if not outcomes:
            if once:
                break
            stop.wait(poll)
    return totals
