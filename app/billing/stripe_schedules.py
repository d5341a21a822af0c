"""Stripe's subscription schedules for ``StripeProvider`` (CONTRACT "Plan changes at the period's end";
https://docs.stripe.com/billing/subscriptions/subscription-schedules)."""
import stripe
from stripe._v1_services import V1Services
from stripe.params import (
    SubscriptionScheduleCreateParams,
    SubscriptionScheduleReleaseParams,
    SubscriptionScheduleUpdateParams,
)

from app.billing.stripe_calls import client_values_refused, provider_call, read


class ScheduleCalls:
    """``ScheduleContract`` on the SDK, mixed into ``StripeProvider`` (which holds ``_v1`` and ``_client``)."""

    _v1: V1Services  # the SDK's ``v1`` service, set by StripeProvider
    _client: stripe.StripeClient

    def retrieve_subscription_schedule(self, schedule_id):
        with provider_call("retrieve subscription schedule"):
            return read(self._client, "subscription_schedules", schedule_id)

    def schedule_subscription(self, subscription_id, idempotency_key):
        params: SubscriptionScheduleCreateParams = {"from_subscription": subscription_id}
        with provider_call("create subscription schedule"):
            return self._v1.subscription_schedules.create(
                params=params, options={"idempotency_key": idempotency_key}).to_dict()

    def update_subscription_schedule(self, schedule_id, params: SubscriptionScheduleUpdateParams, idempotency_key):
        items = [item for phase in params.get("phases") or () for item in phase.get("items") or ()]
        with provider_call("update subscription schedule"), client_values_refused({"items": items}):
            return self._v1.subscription_schedules.update(
                schedule_id, params=params, options={"idempotency_key": idempotency_key}).to_dict()

    def release_subscription_schedule(self, schedule_id, idempotency_key):
        params: SubscriptionScheduleReleaseParams = {}
        with provider_call("release subscription schedule"):
            try:
                return self._v1.subscription_schedules.release(
                    schedule_id, params=params, options={"idempotency_key": idempotency_key}).to_dict()
            except stripe.InvalidRequestError:
                # Stripe refuses to release a schedule no longer running: a release whose answer was lost is done.
                current = self.retrieve_subscription_schedule(schedule_id)
                if current.get("status") in ("not_started", "active"):
                    raise
                return current
