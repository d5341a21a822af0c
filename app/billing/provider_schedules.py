"""The subscription schedules part of the ``SubscriptionProvider`` contract (CONTRACT "Plan changes at the period's
end"): a subscription's plan changed when its period ends. ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod


class ScheduleContract(ABC):
    """What a change at the period's end needs from the provider. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def retrieve_subscription_schedule(self, schedule_id):
        """Return the subscription schedule (https://docs.stripe.com/api/subscription_schedules/retrieve)."""

    @abstractmethod
    def schedule_subscription(self, subscription_id, idempotency_key):
        """Create a schedule from the subscription (``from_subscription``: one phase, the subscription as it is) and
        return it (https://docs.stripe.com/api/subscription_schedules/create). Stripe refuses a second one."""

    @abstractmethod
    def update_subscription_schedule(self, schedule_id, params, idempotency_key):
        """Update the schedule with Stripe's update ``params`` (``phases``, ``end_behavior``, ``metadata``) and return
        it (https://docs.stripe.com/api/subscription_schedules/update). Raises ``UnknownPrice`` (422) for a price
        of ``phases`` Stripe does not know."""

    @abstractmethod
    def release_subscription_schedule(self, schedule_id, idempotency_key):
        """Release the schedule: its phases stop, the subscription stays as it is; return the schedule
        (https://docs.stripe.com/api/subscription_schedules/release). One released already is returned as it is."""
