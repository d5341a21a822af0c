"""``GET /usage``: Stripe's meter event summaries for a customer and period, plus what is still pending here.

Eventually consistent twice over: Stripe aggregates meter events asynchronously (its summaries
"provide an eventually consistent view of the reported usage",
https://docs.stripe.com/api/billing/meter-event-summary), and events accepted here reach Stripe
when the delivery worker sends them: until then they are ``pending``. An event the worker has sent
but Stripe has not aggregated yet is in neither for a moment.
"""
import calendar
from datetime import UTC, datetime

from sqlalchemy import func, select

from app.billing.provider import get_provider
from app.extensions import db
from app.models import UsageEvent
from app.models.usage import PENDING
from app.usage import meters


def _month(now):
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    days = calendar.monthrange(start.year, start.month)[1]
    return int(start.timestamp()), int(start.timestamp()) + days * 86400


def default_period(subscription_id):
    """``(start, end)`` of the subscription's current period at Stripe, else the current UTC calendar month."""
    if subscription_id:
        items = (get_provider().retrieve_subscription(subscription_id).get("items") or {}).get("data") or []
        if items:
            return items[0]["current_period_start"], items[0]["current_period_end"]
    return _month(datetime.now(UTC))


# Values are summed in two halves, each of whose sums fits a 64-bit integer for billions of rows, and
# joined in Python: one SQL SUM of values past 2**63 overflows (SQLite: "integer overflow", a 500).
_HALF = 2**32


def _pending(customer, start, end):
    """``{event_name: (sum of values, count)}`` of the customer's pending events in ``[start, end)``, exact."""
    rows = db.session.execute(
        select(UsageEvent.event_name, func.sum(UsageEvent.value // _HALF), func.sum(UsageEvent.value % _HALF),
               func.count())
        .where(UsageEvent.customer == customer, UsageEvent.status == PENDING,
               UsageEvent.timestamp >= start, UsageEvent.timestamp < end)
        .group_by(UsageEvent.event_name))
    return {name: (int(high) * _HALF + int(low), count) for name, high, low, count in rows}


def usage(customer, start, end):
    """``{"data": [{"event_name", "meter", "value", "pending"}], "start", "end"}`` for each active meter.

    ``start`` and ``end`` are minute-aligned Unix seconds (Stripe's summaries require it; the
    period's own bounds are rounded down to the minute). ``pending`` is what a ``count`` meter
    would add (events) or a ``sum`` / ``last`` one (their values' sum). No customer: no data.
    """
    start, end = start - start % 60, end - end % 60
    if not customer:
        return {"data": [], "start": start, "end": end}
    waiting, provider, data = _pending(customer, start, end), get_provider(), []
    for name, meter in sorted(meters.active().items()):
        total, count = waiting.get(name, (0, 0))
        formula = (meter.get("default_aggregation") or {}).get("formula")
        data.append({"event_name": name, "meter": meter["id"],
                     "value": provider.meter_event_summary(meter["id"], customer, start, end),
                     "pending": count if formula == "count" else total})
    return {"data": data, "start": start, "end": end}
