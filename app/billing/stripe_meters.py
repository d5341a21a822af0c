"""Stripe's Billing Meters for ``StripeProvider``: the active meters, meter events, event summaries.

Separate from ``stripe_provider`` because a meter event's refusals mean something else than a
billing call's: Stripe's 400 "An event already exists with identifier ..." is the proof that an
earlier attempt was received (Stripe keeps identifiers unique for at least 24 hours,
https://docs.stripe.com/api/billing/meter-event/create; the message as langfuse/langfuse#16292
quotes it), so it is a delivery; any other 4xx is final and its message is what the operator
needs; network errors, timeouts, 429 and 5xx are worth retrying (``ProviderUnavailable``).
"""
import logging

import stripe
from stripe._v1_services import V1Services
from stripe.params.billing import MeterEventCreateParams, MeterListEventSummariesParams, MeterListParams

from app.billing.provider_errors import MeterEventRefused
from app.errors import ProviderRejected, ProviderUnavailable

log = logging.getLogger(__name__)

RETRYABLE = (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError, stripe.AuthenticationError)


def _already_exists(exc):
    return "already exists" in (exc.user_message or str(exc)) and (exc.param in (None, "identifier"))


def list_active(v1):
    """Every active meter, as dicts."""
    params: MeterListParams = {"status": "active", "limit": 100}
    try:
        return [meter.to_dict() for meter in v1.billing.meters.list(params=params).auto_paging_iter()]
    except RETRYABLE as exc:
        log.warning("provider call failed: list meters: %s", exc)
        raise ProviderUnavailable() from exc
    except stripe.StripeError as exc:
        raise ProviderRejected.for_call("list meters", exc.code) from exc


def create_event(v1, event_name, payload, identifier, timestamp):
    """``"created"`` or ``"duplicate"``; see ``SubscriptionProvider.create_meter_event``."""
    params: MeterEventCreateParams = {"event_name": event_name, "payload": payload, "identifier": identifier,
                                      "timestamp": timestamp}
    try:
        v1.billing.meter_events.create(params=params)
    except RETRYABLE as exc:
        raise ProviderUnavailable(" ".join(str(exc).split()) or type(exc).__name__) from exc
    except stripe.InvalidRequestError as exc:
        if _already_exists(exc):
            return "duplicate"
        raise MeterEventRefused(exc.user_message or str(exc)) from exc
    except stripe.StripeError as exc:
        raise MeterEventRefused(exc.user_message or str(exc)) from exc
    return "created"


def summary(v1, meter_id, customer_id, start, end):
    """The one summary of ``[start, end)`` (no grouping window): its ``aggregated_value``."""
    params: MeterListEventSummariesParams = {"customer": customer_id, "start_time": start, "end_time": end}
    try:
        found = v1.billing.meters.event_summaries.list(meter_id, params=params).data
    except RETRYABLE as exc:
        raise ProviderUnavailable() from exc
    except stripe.StripeError as exc:
        raise ProviderRejected.for_call("list meter event summaries", exc.code) from exc
    return sum(item.aggregated_value for item in found)


class MeterCalls:
    """``MeterContract`` on the SDK, mixed into ``StripeProvider`` (which holds ``self._v1``)."""

    _v1: V1Services  # the SDK's ``v1`` service, set by StripeProvider

    def list_active_meters(self):
        return list_active(self._v1)

    def create_meter_event(self, event_name, payload, identifier, timestamp):
        return create_event(self._v1, event_name, payload, identifier, timestamp)

    def meter_event_summary(self, meter_id, customer_id, start, end):
        return summary(self._v1, meter_id, customer_id, start, end)
