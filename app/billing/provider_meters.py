"""The Billing Meters part of the ``SubscriptionProvider`` contract (CONTRACT "Usage-based billing"):
the active meters, meter events and their summaries. ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod


class MeterContract(ABC):
    """What usage billing needs from the provider. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def list_active_meters(self):
        """Return the active billing meters (``billing.meter`` dicts), every page."""

    @abstractmethod
    def create_meter_event(self, event_name, payload, identifier, timestamp):
        """Send one meter event; return ``"created"``, or ``"duplicate"`` when Stripe already has ``identifier``.

        ``payload`` maps the meter's payload keys to strings; ``timestamp`` is Unix seconds. Raises
        ``MeterEventRefused`` (with Stripe's message) for any other refusal, ``ProviderUnavailable``
        for a network error, a timeout, a 429 or a 5xx (worth retrying).
        """

    @abstractmethod
    def meter_event_summary(self, meter_id, customer_id, start, end):
        """Return the meter's aggregated value for the customer in ``[start, end)`` (minute-aligned Unix seconds)."""
