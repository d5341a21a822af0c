"""Billing periods: a price's recurring interval added to a time, a subscription's current period."""

from __future__ import annotations

import calendar
import datetime as dt


def add_interval(ts: int, interval: str, count: int = 1) -> int:
    """Advance a timestamp by a price's recurring interval (calendar months, clamped)."""
    if interval == "day":
        return ts + 86400 * count
    if interval == "week":
        return ts + 7 * 86400 * count
    months = count * (12 if interval == "year" else 1)
    d = dt.datetime.fromtimestamp(ts, dt.UTC)
    year, month = divmod(d.month - 1 + months, 12)
    year, month = d.year + year, month + 1
    day = min(d.day, calendar.monthrange(year, month)[1])
    return int(d.replace(year=year, month=month, day=day).timestamp())


def period_end(sub: dict) -> int:
    return min(item["current_period_end"] for item in sub["items"]["data"])


def period_start(sub: dict) -> int:
    return min(item["current_period_start"] for item in sub["items"]["data"])
