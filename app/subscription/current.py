"""The billable's subscription a change acts on, found under its lock, Stripe's answer written back, and
the proration dates previews issue. Shared by ``management`` (swap, seats, cancel, resume), the billing
pages and an organisation's seats. Nothing here commits.
"""
import time
from datetime import timedelta

from sqlalchemy import bindparam, delete, text

from app.billing import objects, plans, state
from app.billing.provider import get_provider
from app.billing.provider_errors import InvalidProrationDate
from app.billing.statuses import DUNNING_STATUSES, LIVE_STATUSES, PAUSED_STATUSES
from app.errors import Conflict
from app.extensions import db
from app.models import ProrationQuote
from app.models.types import UTCDateTime
from app.subscription.errors import NotSubscribed, PaymentPending, SubscriptionPastDue
from app.timeutil import utcnow

# How old a client's proration_date may be, seconds: the preview's, sent within 10 minutes
# (CONTRACT "Changes to the third round"); and how far ahead, for clocks of hosts that differ.
PRORATION_DATE_MAX_AGE = 600
PRORATION_DATE_SKEW = 5


def locked_subscriptions(billable):
    """Lock the billable and return their subscriptions as stored now (a webhook may have written since)."""
    billable.lock()
    db.session.expire(billable, ["subscriptions"])
    return billable.subscriptions


def live_subscription(subscriptions):
    """Return the newest subscription in a live status (paid for, or in dunning), or ``None``."""
    return plans.newest([s for s in subscriptions if s.provider_status in LIVE_STATUSES])


def changeable(billable, lock=True):
    subscriptions = locked_subscriptions(billable) if lock else billable.subscriptions
    subscription = live_subscription(subscriptions)
    if subscription is None:
        raise NotSubscribed.paused() if paused(subscriptions) is not None else NotSubscribed()
    return subscription


def paused(subscriptions):
    """The newest subscription paused for want of a card (a trial that ended without one), or ``None``."""
    return plans.newest([s for s in subscriptions if s.provider_status in PAUSED_STATUSES])


def priced(billable, lock=True):
    """The live subscription whose price or seats may change: not in dunning, one price."""
    subscription = changeable(billable, lock)
    if subscription.provider_status in DUNNING_STATUSES:
        raise SubscriptionPastDue.for_status(subscription.provider_status)
    prices = len(subscription.licensed_items)
    if prices != 1:
        raise Conflict(f"The subscription has {prices} prices; only a single-price subscription can be changed "
                       "here.", details={"items": prices})
    return subscription


def write(billable, live):
    """Write Stripe's answer as ``sync`` does (now) and recompute the plan; return the row."""
    subscription = state.apply_subscription(billable, live, state.live_as_of())
    plans.recompute_plan(billable)
    return subscription


def refuse_while_pending(billable, subscription):
    """Raise ``PaymentPending`` (409) while a change of the subscription waits for its invoice.

    The row says so from Stripe's own answers (a 402 here, or a webhook); Stripe is asked once more
    before refusing, since the invoice may have been paid, or the update expired, a moment ago.
    """
    if subscription.pending_expires_at is None or subscription.pending_expires_at <= utcnow():
        return
    live = get_provider().retrieve_subscription(subscription.provider_id)
    write(billable, live)
    if objects.pending_update_of(live) is not None and isinstance(live.get("latest_invoice"), dict):
        raise PaymentPending.for_invoice(live["latest_invoice"])


def stripe_now(subscription):
    """Return Stripe's "now" for the subscription, Unix seconds: this host's clock, or, for one on a
    Stripe test clock (test mode), the clock's frozen time, which Stripe prorates from."""
    if subscription.test_clock:
        return get_provider().test_clock_time(subscription.test_clock)
    return int(time.time())


# A preview's proration date, stored for the swap that follows; a second preview in the same second
# issues the same one. Text for both databases (SQLite 3.24+), as the webhook ledger's insert.
_QUOTE = text("INSERT INTO proration_quotes (provider_subscription, proration_date, created_at) "
              "VALUES (:subscription, :date, :created_at) ON CONFLICT DO NOTHING"
              ).bindparams(bindparam("created_at", type_=UTCDateTime()))


def check_proration_date(subscription, value, now):
    """Refuse a ``proration_date`` (Unix seconds) that no preview of ``subscription`` issued in the last
    ``PRORATION_DATE_MAX_AGE`` seconds, or that is older than that before ``now`` (``stripe_now``).

    CONTRACT "Changes to the fourth round": only a preview's date is taken; any other date, even a
    recent one, would let the client choose what it pays (a backdated downgrade). Raises
    ``InvalidProrationDate`` (422).
    """
    if not now - PRORATION_DATE_MAX_AGE <= value <= now + PRORATION_DATE_SKEW:
        raise InvalidProrationDate.not_recent()
    issued = db.session.get(ProrationQuote, (subscription.provider_id, value))
    if issued is None or issued.created_at < utcnow() - timedelta(seconds=PRORATION_DATE_MAX_AGE):
        raise InvalidProrationDate.not_issued()


def issue_proration_date(subscription, value):
    """Store ``value`` as a proration date this preview issued, dropping the subscription's expired ones."""
    db.session.execute(delete(ProrationQuote).where(
        ProrationQuote.provider_subscription == subscription.provider_id,
        ProrationQuote.created_at < utcnow() - timedelta(seconds=PRORATION_DATE_MAX_AGE)))
    db.session.execute(_QUOTE, {"subscription": subscription.provider_id, "date": value, "created_at": utcnow()})
