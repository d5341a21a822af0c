"""The Checkout part of the ``SubscriptionProvider`` contract (CONTRACT "Selling"): the sessions the service
hands out, and whether one is still open. ``SubscriptionProvider`` inherits it."""
from abc import ABC, abstractmethod


class CheckoutContract(ABC):
    """What Stripe Checkout needs from the provider. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def create_checkout_session(self, customer_id, line, urls, idempotency_key, trial_days=0, promotion_code=None,
                                metered=(), automatic_tax=False):
        """Create a Checkout Session in ``subscription`` mode for the customer; return it (``id``, ``url``).

        ``line`` is ``{"price", "quantity"}``, plus a line (no quantity) per metered price id of
        ``metered``; ``urls`` ``{"success_url", "cancel_url"}``. With
        ``trial_days`` (> 0) the subscription starts as a free trial; ``promotion_code`` (an id) is
        applied, else the page lets the customer type one (``allow_promotion_codes``);
        ``automatic_tax`` asks Stripe Tax to compute tax (the page collects the address).
        """

    @abstractmethod
    def has_open_checkout_session(self, customer_id):
        """Whether the customer has a Checkout Session still ``open`` (not completed, expired or expired by
        Stripe after its ``expires_at``): its subscription, at the quantity it was created with, may yet start."""
