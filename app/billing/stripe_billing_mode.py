"""Stripe's billing modes for ``StripeProvider``: a ``classic`` subscription moved to ``flexible`` before a
change that prorates (CONTRACT "Changes to the fifth round": credits never exceed what was paid).

``flexible`` credit prorations come from the amounts actually debited; ``classic`` ones from the current
price, whatever was paid (https://docs.stripe.com/billing/subscriptions/billing-mode/compare).
"""
from collections.abc import Callable

import stripe
from stripe._v1_services import V1Services
from stripe.params import SubscriptionMigrateParams

from app.billing.stripe_calls import SUBSCRIPTION_EXPAND, provider_call


class BillingModeCalls:
    """``BillingModeContract`` on the SDK, mixed into ``StripeProvider`` (which holds ``self._v1``)."""

    _v1: V1Services  # the SDK's ``v1`` service, set by StripeProvider
    retrieve_subscription: Callable[[str], dict]  # StripeProvider's
    # Whether the service's rows know a subscription id as ``classic``: ``billing_modes.is_classic``, handed in
    # by ``create_app`` so that the adapter reads no row itself (docs/billing.md "Layout").
    _is_classic: Callable[[str], bool]

    def migrate_billing_mode(self, subscription_id):
        params: SubscriptionMigrateParams = {"billing_mode": {"type": "flexible"}, "expand": SUBSCRIPTION_EXPAND}
        with provider_call("migrate subscription"):
            try:
                return self._v1.subscriptions.migrate(subscription_id, params=params).to_dict()
            except stripe.InvalidRequestError:
                # Stripe refuses to migrate a flexible subscription: a migration whose answer was lost is done.
                current = self.retrieve_subscription(subscription_id)
                if (current.get("billing_mode") or {}).get("type") != "flexible":
                    raise
                return current

    def _flexible_first(self, subscription_id):
        """Migrate the subscription first when the service knows it as ``classic`` (see ``migrate_billing_mode``)."""
        if self._is_classic(subscription_id):
            self.migrate_billing_mode(subscription_id)
