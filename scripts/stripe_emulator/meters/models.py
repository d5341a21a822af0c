"""Billing meters and meter events (https://docs.stripe.com/api/billing/meter), with Stripe's rules.

- A meter aggregates the events whose ``event_name`` is its own by ``default_aggregation.formula``:
  ``sum`` of the values, ``count`` of the events, or the ``last`` value (by event timestamp)
  (https://docs.stripe.com/billing/subscriptions/usage-based/meters/configure). An event names
  its customer under the meter's ``customer_mapping.event_payload_key`` (default
  ``stripe_customer_id``) and its value under ``value_settings.event_payload_key`` (default ``value``).
- ``POST /v1/billing/meter_events`` refuses at once what Stripe refuses at once: an ``identifier``
  seen within the last 24 hours (Stripe's 400 "An event already exists with identifier ..."; its
  uniqueness window is "a rolling period of at least 24 hours", the SDK's ``MeterEventCreateParams``;
  the message as langfuse/langfuse#16292 quotes it) and a ``timestamp`` outside the past 35 calendar
  days or more than 5 minutes ahead (the same params' documentation), and, since 2026-04-22, a value of
  more than 15 significant digits (its changelog, named at ``_check_digits``). What Stripe checks only
  after accepting (no active meter for the name, no customer under the mapping key, a value that is
  not a whole number: "only accepts whole number values",
  https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage-api) is accepted and not
  counted, recorded in ``meter_error_reports`` as Stripe's ``v1.billing.meter.error_report_triggered``
  would report it
  (https://docs.stripe.com/api/v2/core/events/event-types).
- Summaries cover ``[start_time, end_time)``, both aligned with minute boundaries
  (https://docs.stripe.com/api/billing/meter-event-summary/object); ``value_grouping_window``
  ``hour`` / ``day`` splits them on hour or UTC-day boundaries, which the bounds must then align with.

The caller holds the store lock.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from ..core.store import Store, StripeError, new_id

IDENTIFIER_WINDOW = 24 * 3600
PAST_WINDOW = 35 * 86400
FUTURE_WINDOW = 5 * 60
GROUPING = {None: None, "hour": 3600, "day": 86400}
MAX_SIGNIFICANT_DIGITS = 15


def create_meter(store: Store, params: dict) -> dict:
    """A new active meter; Stripe allows one active meter per ``event_name``."""
    if any(m["event_name"] == params["event_name"] and m["status"] == "active" for m in store.meters.values()):
        raise StripeError(400, f"An active meter with event_name `{params['event_name']}` already exists.",
                          param="event_name")
    now = store.now()
    meter = {
        "id": new_id("mtr_test_", 24), "object": "billing.meter", "created": now,
        "customer_mapping": params.get("customer_mapping") or {"event_payload_key": "stripe_customer_id",
                                                               "type": "by_id"},
        "default_aggregation": params["default_aggregation"], "display_name": params["display_name"],
        "event_name": params["event_name"], "event_time_window": params.get("event_time_window"),
        "livemode": False, "status": "active", "status_transitions": {"deactivated_at": None},
        "updated": now, "value_settings": params.get("value_settings") or {"event_payload_key": "value"},
    }
    store.meters[meter["id"]] = meter
    return meter


def set_status(store: Store, meter: dict, active: bool) -> dict:
    """``deactivate`` / ``reactivate``: an inactive meter counts no new event."""
    if active and meter["status"] != "active" and active_meter(store, meter["event_name"]):
        raise StripeError(400, f"An active meter with event_name `{meter['event_name']}` already exists.")
    meter["status"] = "active" if active else "inactive"
    meter["status_transitions"]["deactivated_at"] = None if active else store.now()
    meter["updated"] = store.now()
    return meter


def active_meter(store: Store, event_name: str) -> dict | None:
    return next((m for m in store.meters.values() if m["event_name"] == event_name and m["status"] == "active"),
                None)


def _check_window(now: int, timestamp: int) -> None:
    if timestamp < now - PAST_WINDOW:
        raise StripeError(400, "Timestamp must be within the past 35 calendar days.", param="timestamp")
    if timestamp > now + FUTURE_WINDOW:
        raise StripeError(400, "Timestamp must be no more than 5 minutes in the future.", param="timestamp")


def _check_identifier(store: Store, identifier: str, now: int) -> None:
    seen = store.meter_identifiers.get(identifier)
    if seen is not None and seen > now - IDENTIFIER_WINDOW:
        raise StripeError(400, f"An event already exists with identifier {identifier}.", param="identifier")


def _number(text) -> int | None:
    """An event's value: a whole number ("The meter event value only accepts whole number values",
    https://docs.stripe.com/billing/subscriptions/usage-based/recording-usage-api), negative ones included
    (corrections), else ``None``."""
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _significant_digits(text) -> int | None:
    """The significant digits of a decimal number's text (leading and trailing zeros not counted), else ``None``."""
    try:
        number = Decimal(str(text).strip())
    except InvalidOperation:
        return None
    return len(number.normalize().as_tuple().digits) if number.is_finite() else None


def _check_digits(meter: dict | None, payload: dict) -> None:
    """Stripe's synchronous refusal, since API version 2026-04-22, of a value of more than
    ``MAX_SIGNIFICANT_DIGITS`` significant digits
    (https://docs.stripe.com/changelog/dahlia/2026-04-22/billing-meter-event-values-validation)."""
    key = meter["value_settings"]["event_payload_key"] if meter else "value"
    digits = _significant_digits(payload.get(key))
    if digits is not None and digits > MAX_SIGNIFICANT_DIGITS:
        raise StripeError(400, f"The value in the event payload can have at most {MAX_SIGNIFICANT_DIGITS} digits. "
                          f"Received {payload[key]}.", param=f"payload[{key}]")


def _asynchronous_error(meter: dict | None, payload: dict) -> tuple[str, str] | None:
    """Stripe's code and message for an accepted event it will not count, else ``None``."""
    if meter is None:
        return "no_meter", "No active meter was found for this event_name."
    key = meter["customer_mapping"]["event_payload_key"]
    if not payload.get(key):
        return "meter_event_no_customer_defined", f"Customer mapping key {key} not found in payload."
    value_key = meter["value_settings"]["event_payload_key"]
    if meter["default_aggregation"]["formula"] != "count" and _number(payload.get(value_key)) is None:
        return "meter_event_invalid_value", f"Value key {value_key} is missing or not a whole number."
    return None


def record_event(store: Store, params: dict) -> dict:
    """``POST /v1/billing/meter_events``: the event as Stripe answers it (``billing.meter_event``)."""
    payload = dict(params["payload"])
    meter = active_meter(store, params["event_name"])
    customer = (payload.get(meter["customer_mapping"]["event_payload_key"]) if meter else None) or ""
    # A customer on a test clock lives in its time: the window and the default timestamp are the clock's.
    with store.on_clock(store.clock_of(customer)):
        now = store.now()
    timestamp = params.get("timestamp", now)
    _check_window(now, timestamp)
    _check_digits(meter, payload)
    identifier = params.get("identifier") or new_id("", 32)
    _check_identifier(store, identifier, store.now())
    store.meter_identifiers[identifier] = store.now()
    event = {"object": "billing.meter_event", "created": store.now(), "event_name": params["event_name"],
             "identifier": identifier, "livemode": False, "payload": payload, "timestamp": timestamp}
    error = _asynchronous_error(meter, payload)
    if error:
        store.meter_error_reports.append({"code": error[0], "error_message": error[1], "identifier": identifier})
    else:
        store.meter_events.append({**event, "_meter": meter["id"], "_customer": customer})
    return event


def aggregate(store: Store, meter: dict, customer: str, start: int, end: int) -> float:
    """The meter's aggregated value for ``customer``'s events timestamped in ``[start, end)``."""
    events = [e for e in store.meter_events
              if e["_meter"] == meter["id"] and e["_customer"] == customer and start <= e["timestamp"] < end]
    formula = meter["default_aggregation"]["formula"]
    if formula == "count":
        return float(len(events))
    values = [_number(e["payload"][meter["value_settings"]["event_payload_key"]]) or 0.0
              for e in sorted(events, key=lambda e: e["timestamp"])]
    if formula == "last":
        return values[-1] if values else 0.0
    return float(sum(values))


def _aligned(params: dict) -> int | None:
    window = GROUPING[params.get("value_grouping_window")]
    for name in ("start_time", "end_time"):
        if params[name] % 60:
            raise StripeError(400, f"{name} must be aligned with minute boundaries.", param=name)
        if window and params[name] % window:
            raise StripeError(400, f"{name} must be aligned with {params['value_grouping_window']} boundaries "
                              "when value_grouping_window is set.", param=name)
    if params["end_time"] <= params["start_time"]:
        raise StripeError(400, "end_time must be after start_time.", param="end_time")
    return window


def summaries(store: Store, meter: dict, params: dict) -> list[dict]:
    """``GET /v1/billing/meters/{id}/event_summaries``: one summary per window, newest first."""
    store.get("customers", params["customer"], "customer")
    window = _aligned(params)
    start, end = params["start_time"], params["end_time"]
    bounds = [(s, min(s + window, end)) for s in range(start, end, window)] if window else [(start, end)]
    return [{"id": new_id("mtrusg_test_", 40), "object": "billing.meter_event_summary",
             "aggregated_value": aggregate(store, meter, params["customer"], s, e), "end_time": e,
             "livemode": False, "meter": meter["id"], "start_time": s} for s, e in reversed(bounds)]
