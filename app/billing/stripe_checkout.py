"""Stripe Checkout for ``StripeProvider``: the sessions the service hands out, which are open, and closing one."""
from stripe._v1_services import V1Services
from stripe.params.checkout import SessionCreateParams as CheckoutSessionCreateParams
from stripe.params.checkout import SessionListParams as CheckoutSessionListParams

from app.billing.provider_checkout import CHECKOUT_ORIGIN
from app.billing.stripe_calls import BILLING_MODE, client_values_refused, provider_call
from app.errors import ProviderRejected


class CheckoutCalls:
    """The ``CheckoutContract`` half of ``StripeProvider``."""

    _v1: V1Services  # the SDK's ``v1`` service, set by StripeProvider

    def create_checkout_session(self, customer_id, line, urls, idempotency_key, trial_days=0, promotion_code=None,
                                metered=(), automatic_tax=False, metadata=None):
        params: CheckoutSessionCreateParams = {
            "mode": "subscription", "customer": customer_id,
            "line_items": [{"price": line["price"], "quantity": line["quantity"]}]
            + [{"price": other} for other in metered],
            "success_url": urls["success_url"], "cancel_url": urls["cancel_url"], "metadata": dict(metadata or {}),
        }
        # Stripe's own code box stays off (no ``allow_promotion_codes``): a code typed there would
        # skip the service's rules (once per person, restrictions); one reaches Checkout only resolved.
        if promotion_code:
            params["discounts"] = [{"promotion_code": promotion_code}]
        # Marked, so that its creation's webhook leaves its trial to the session's completion (CommitPlan).
        params["subscription_data"] = {"metadata": {"origin": CHECKOUT_ORIGIN}, "billing_mode": {"type": BILLING_MODE}}
        if trial_days:
            params["subscription_data"]["trial_period_days"] = trial_days
        if automatic_tax:
            # Stripe Tax needs the customer's address: the page collects it onto the customer.
            params["automatic_tax"] = {"enabled": True}
            params["customer_update"] = {"address": "auto"}
        with provider_call("create checkout session"), client_values_refused({"items": [line]}):
            return self._v1.checkout.sessions.create(
                params=params, options={"idempotency_key": idempotency_key}).to_dict()

    def list_checkout_sessions(self, customer_id, limit, status=None):
        # Stripe expires an open session at its ``expires_at`` (24 hours by default), so an abandoned
        # one stops counting by itself (https://docs.stripe.com/api/checkout/sessions/list#list_checkout_sessions-status).
        params: CheckoutSessionListParams = {"customer": customer_id, "limit": limit}
        if status:
            params["status"] = status
        with provider_call("list checkout sessions"):
            return [session.to_dict() for session in self._v1.checkout.sessions.list(params=params).data]

    def expire_checkout_session(self, session_id):
        try:
            with provider_call("expire checkout session"):
                return self._v1.checkout.sessions.expire(session_id).to_dict()
        except ProviderRejected:
            # Stripe refuses to expire a session that is no longer open: paid meanwhile, or expired by itself.
            with provider_call("retrieve checkout session"):
                return self._v1.checkout.sessions.retrieve(session_id).to_dict()
