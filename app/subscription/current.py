"""The billable's subscription a change acts on, found under its lock, and Stripe's answer written back.

Shared by ``management`` (swap, seats, cancel, resume) and the views that read the live subscription.
Nothing here commits.
"""
import time

from app.billing import objects, plans, state
from app.billing.provider import InvalidProrationDate, get_provider
from app.billing.statuses import DUNNING_STATUSES, LIVE_STATUSES, PAUSED_STATUSES
from app.errors import Conflict
from app.extensions import db
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
    if len(subscription.items) != 1:
        raise Conflict(f"The subscription has {len(subscription.items)} prices; only a single-price "
                       "subscription can be changed here.", details={"items": len(subscription.items)})
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


def check_proration_date(value, now):
    """Refuse a ``proration_date`` (Unix seconds) older than ``PRORATION_DATE_MAX_AGE`` before ``now``
    (``stripe_now``) or in the future.

    CONTRACT "Changes to the third round": only a preview's date, sent within 10 minutes, is taken;
    any other date would let the client choose what it pays. ``PRORATION_DATE_SKEW`` seconds
    ahead are allowed for hosts whose clocks differ. Raises ``InvalidProrationDate`` (422).
    """
    if not now - PRORATION_DATE_MAX_AGE <= value <= now + PRORATION_DATE_SKEW:
        raise InvalidProrationDate.not_recent()
