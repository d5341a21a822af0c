"""The Stripe Entitlements part of the ``SubscriptionProvider`` contract (CONTRACT "Additions (sixth round)",
"Entitlements"): a customer's active entitlements. ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod


class EntitlementsContract(ABC):
    """What ``app.entitlements.stripe_features`` needs from the provider. Every call may raise
    ``ProviderUnavailable``, or ``ProviderRejected`` (a customer the provider does not know)."""

    @abstractmethod
    def list_active_entitlements(self, customer_id):
        """Return the customer's active entitlements as Stripe's list object (a dict: ``data``, each with
        ``lookup_key``, and ``has_more``): one page of at most 100, never followed further
        (https://docs.stripe.com/api/entitlements/active-entitlement/list)."""
