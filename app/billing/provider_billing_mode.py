"""The billing-mode part of the ``SubscriptionProvider`` contract (CONTRACT "Changes to the fifth round":
credits never exceed what was paid). ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod


class BillingModeContract(ABC):
    """Moving a subscription between Stripe's billing modes. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def migrate_billing_mode(self, subscription_id):
        """Move the ``classic`` subscription to Stripe's ``flexible`` billing mode and return it as Stripe answered.

        Stripe's ``POST /v1/subscriptions/{id}/migrate`` with ``billing_mode[type]=flexible``
        (https://docs.stripe.com/api/subscriptions/migrate): from then on its credit prorations come from what
        was debited (CONTRACT "Changes to the fifth round": credits never exceed what was paid). One already
        ``flexible`` (a migration whose answer was lost) is returned as it is. ``update_subscription``,
        ``cancel_subscription``, ``resume_subscription`` and a change's ``preview_invoice`` call it first for a
        subscription the service knows as ``classic``.
        """
