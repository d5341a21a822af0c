"""The Checkout part of the ``SubscriptionProvider`` contract (CONTRACT "Selling"): the sessions the service
hands out, which of them are still open, and closing one. ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod

# ``metadata.origin`` of a subscription Stripe Checkout made for the service (``subscription_data.metadata``).
CHECKOUT_ORIGIN = "checkout"


class CheckoutContract(ABC):
    """What Stripe Checkout needs from the provider. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def create_checkout_session(self, customer_id, line, urls, idempotency_key, trial_days=0, promotion_code=None,
                                metered=(), automatic_tax=False, metadata=None):
        """Create a Checkout Session in ``subscription`` mode for the customer; return it (``id``, ``url``).

        ``line`` is ``{"price", "quantity"}``, plus a line (no quantity) per metered price id of
        ``metered``; ``urls`` ``{"success_url", "cancel_url"}``. With
        ``trial_days`` (> 0) the subscription starts as a free trial; ``promotion_code`` (an id) is
        applied (the page has no code box of its own: a code typed there would skip the service's
        rules); ``automatic_tax`` asks Stripe Tax to compute tax (the page collects the address);
        ``metadata`` (``{str: str}``) is kept on the session.
        """

    @abstractmethod
    def list_checkout_sessions(self, customer_id, limit, status=None):
        """Return the customer's ``limit`` newest Checkout Sessions, newest first, as dicts (``id``, ``url``,
        ``status``, ``subscription``, ``metadata``); only those in ``status`` when given. One still ``open``
        (not completed, expired, or expired by Stripe after its ``expires_at``) may yet start its
        subscription, at the quantity it was created with."""

    @abstractmethod
    def expire_checkout_session(self, session_id):
        """Expire an open Checkout Session so that its page can no longer be paid; return the session as it
        is now (``status`` ``expired``, or ``complete`` when the customer paid it first)."""
