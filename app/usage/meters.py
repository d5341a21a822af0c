"""The active billing meters, read from Stripe and kept in the process like the plan catalogue.

Each process keeps Stripe's active meters (``{event_name: meter}``) for ``PROVIDER_CATALOG_TTL``
seconds, as ``app.billing.catalog`` keeps the plans. A name not found is read again from Stripe at
most once per ``MISS_REFRESH_SECONDS``, so a meter created a moment ago is found without waiting out
the TTL, and a batch of unknown names costs Stripe one call, not one per request. Stripe sends no
``billing.meter.*`` event to the v1 webhook endpoint this service listens on, so the TTL bounds how
long a deactivated meter is still taken (Stripe then accepts its events and counts none of them).
"""
import threading
import time

from flask import current_app

from app.billing.provider import get_provider

MISS_REFRESH_SECONDS = 5


def _cache():
    return current_app.extensions.setdefault("usage_meters", {"lock": threading.Lock(), "entry": None})


def _read():
    return {meter["event_name"]: meter for meter in get_provider().list_active_meters()}


def active(names=()):
    """Return ``{event_name: meter}`` of the active meters, fresh enough to know each of ``names`` if Stripe does.

    Raises ``ProviderUnavailable`` (503) when Stripe cannot be read and no copy is fresh.
    """
    cache = _cache()
    now = time.monotonic()
    entry = cache["entry"]
    stale = entry is None or now - entry["read_at"] >= current_app.config["PROVIDER_CATALOG_TTL"]
    missing = entry is not None and not set(names) <= entry["meters"].keys() \
        and now - entry["read_at"] >= MISS_REFRESH_SECONDS
    if stale or missing:
        with cache["lock"]:
            if cache["entry"] is entry:  # no other thread read it meanwhile
                cache["entry"] = {"read_at": time.monotonic(), "meters": _read()}
            entry = cache["entry"]
    return entry["meters"]


def payload_keys(meter):
    """``(customer key, value key)`` of the meter's payload (Stripe's defaults when unset)."""
    return ((meter.get("customer_mapping") or {}).get("event_payload_key") or "stripe_customer_id",
            (meter.get("value_settings") or {}).get("event_payload_key") or "value")
