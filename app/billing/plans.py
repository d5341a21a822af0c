"""Which plan a billable is entitled to, computed from their stored subscriptions (SPEC 6 listener rule 1)."""
import logging

from flask import current_app, g

from app.billing import statuses, writer
from app.timeutil import utcnow

log = logging.getLogger(__name__)


def plan_for_price(price):
    """Return the plan name of a provider price through ``PROVIDER_PLANS``.

    A price the service does not know (say, one added in the provider's dashboard) is shown as its
    own id, with a warning, rather than silently downgrading a paying billable to the free plan. The
    warning is logged once per price and app context (a request, a command).
    """
    plans = current_app.config["PROVIDER_PLANS"]
    if price in plans:
        return plans[price]
    # One answer resolves a price more than once (the billable's plan, then their subscription's).
    warned = g.setdefault("unmapped_prices_warned", set())
    if price not in warned:
        warned.add(price)
        log.warning("price %s is not in PROVIDER_PLANS; using the price id as the plan name", price)
    return price


def newest(subscriptions):
    """Return the newest of ``subscriptions`` (by the provider's creation time, then id), or ``None``."""
    # A row written in this transaction has no id yet: it sorts as the newest of its second.
    return max(subscriptions, key=lambda s: (s.provider_created_at or s.created_at, s.id or 2**63), default=None)


def entitled_subscription(billable, now=None):
    """Return the newest subscription that is valid at ``now``, or ``None``."""
    now = now or utcnow()
    return newest([s for s in billable.subscriptions if statuses.entitles(s, now)])


def entitled_plan(billable, now=None):
    """Return the plan name the billable is entitled to at ``now``: ``FREE_PLAN`` without a valid subscription."""
    subscription = entitled_subscription(billable, now)
    if subscription is None or subscription.provider_price is None:
        return current_app.config["FREE_PLAN"]
    return plan_for_price(subscription.provider_price)


def current_subscription(billable, now=None):
    """Return the subscription to show the billable: the entitled one, else the newest."""
    subscription = entitled_subscription(billable, now)
    return subscription if subscription is not None else newest(billable.subscriptions)


def recompute_plan(billable):
    """Store the entitled plan in ``users.plan`` (``None`` for the free plan); return ``(before, after)``."""
    before = billable.plan
    plan = entitled_plan(billable)
    writer.write_billable(billable, plan=None if plan == current_app.config["FREE_PLAN"] else plan)
    return before, billable.plan

