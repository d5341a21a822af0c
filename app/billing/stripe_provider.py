"""``StripeProvider``: the ``SubscriptionProvider`` contract on the official ``stripe`` SDK.

With ``stripe_customers`` (the customer side) and ``stripe_calls`` (the SDK's errors mapped onto
ours), the only modules that import ``stripe``. The SDK retries idempotent requests itself
(``max_network_retries``) and every create carries an idempotency key.
"""
import logging
import time

import stripe
from stripe.params import (
    InvoiceCreatePreviewParams,
    InvoiceCreatePreviewParamsSubscriptionDetails,
    PriceListParams,
    PromotionCodeListParams,
    SubscriptionCancelParams,
    SubscriptionCreateParams,
    SubscriptionListParams,
    SubscriptionResumeParams,
    SubscriptionRetrieveParams,
    SubscriptionUpdateParams,
    WebhookEndpointListParams,
)
from stripe.params.entitlements import ActiveEntitlementListParams

from app import jsonbody
from app.billing.provider import SubscriptionProvider
from app.billing.provider_errors import ChangeDeclined
from app.billing.stripe_billing_mode import BillingModeCalls
from app.billing.stripe_calls import (
    BILLING_MODE,
    SUBSCRIPTION_EXPAND,
    client_values_refused,
    one_line,
    provider_call,
    read,
    requests_session,
    signed_at,
)
from app.billing.stripe_checkout import CheckoutCalls
from app.billing.stripe_customers import CustomerCalls
from app.billing.stripe_meters import MeterCalls
from app.billing.stripe_schedules import ScheduleCalls
from app.errors import InvalidJson, InvalidSignature, UnknownPrice

log = logging.getLogger(__name__)


def _knows_no_rows(_subscription_id):
    return False


class StripeProvider(CustomerCalls, CheckoutCalls, MeterCalls, BillingModeCalls, ScheduleCalls, SubscriptionProvider):
    def __init__(self, api_key, api_base=None, timeout=5, max_network_retries=1, is_classic=None):
        """``timeout`` is per HTTP attempt, in seconds; ``api_base`` points the SDK at the emulator;
        ``is_classic(subscription_id)`` says whether the service knows a subscription as ``classic`` (default:
        never, the provider on its own knowing no rows)."""
        self._client = stripe.StripeClient(
            api_key or "sk_test_unset",
            base_addresses={"api": api_base} if api_base else None,
            max_network_retries=max_network_retries,
            http_client=stripe.RequestsClient(timeout=timeout, session=requests_session(api_base or stripe.api_base)),
        )
        self._v1 = self._client.v1
        self._is_classic = is_classic or _knows_no_rows

    def verify_event(self, payload, signature_header, secrets, tolerance):
        """Verify Stripe's ``Stripe-Signature`` (HMAC-SHA256 over ``t.`` + body) with any of ``secrets``.

        The SDK checks the HMAC; the timestamp is checked here, in whole seconds and both ways: a
        signature is accepted when ``|now - t| <= tolerance``. Stripe's ``t`` is whole seconds and
        its documented tolerance too, but the SDK compares ``t`` with fractional ``time.time()``
        (so a signature exactly ``tolerance`` seconds old was refused), and it lets any timestamp
        in the future pass, so a captured signature could be pre-dated for later replay. A body
        that is not UTF-8, or a signed one that is not JSON, is ``InvalidJson`` (400).
        """
        if not signature_header:
            raise InvalidSignature("The Stripe-Signature header is missing.")
        try:
            payload.decode("utf-8")
        except UnicodeDecodeError:
            # Not JSON (RFC 8259 8.1), whoever signed it; and the SDK decodes before comparing,
            # so it would raise past us (a 500).
            raise InvalidJson() from None
        for secret in secrets:
            try:
                stripe.WebhookSignature.verify_header(payload, signature_header, secret, tolerance=None)
                break
            except stripe.SignatureVerificationError:
                continue
        else:
            raise InvalidSignature()
        age = int(time.time()) - signed_at(signature_header)
        if age > tolerance:
            raise InvalidSignature()
        if -age > tolerance:
            raise InvalidSignature("The webhook signature timestamp is in the future.")
        return jsonbody.loads(payload)

    def create_subscription(self, customer_id, price, idempotency_key, trial_days=0, promotion_code=None,
                            automatic_tax=False, quantity=None, metered=()):
        params: SubscriptionCreateParams = {
            "customer": customer_id,
            "items": [{"price": price, "quantity": quantity} if quantity else {"price": price}]
            + [{"price": other} for other in metered],
            "payment_behavior": "default_incomplete",
            "payment_settings": {"save_default_payment_method": "on_subscription"},
            "billing_mode": {"type": BILLING_MODE},
            "expand": SUBSCRIPTION_EXPAND,
        }
        if promotion_code:
            params["discounts"] = [{"promotion_code": promotion_code}]
        if automatic_tax:
            params["automatic_tax"] = {"enabled": True}
        if trial_days:
            params["trial_period_days"] = trial_days
            params["trial_settings"] = {"end_behavior": {"missing_payment_method": "pause"}}
        with provider_call("create subscription"), client_values_refused(params):
            subscription = self._v1.subscriptions.create(params=params, options={"idempotency_key": idempotency_key})
        return subscription.to_dict()

    def retrieve_price(self, price_id):
        with provider_call("retrieve price"):
            try:
                return self._v1.prices.retrieve(price_id).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    raise UnknownPrice.for_price(price_id) from exc
                raise

    def find_promotion_code(self, code):
        params: PromotionCodeListParams = {"code": code, "active": True, "limit": 1,
                                           "expand": ["data.promotion.coupon"]}
        with provider_call("find promotion code"):
            found = self._v1.promotion_codes.list(params=params).data
        return found[0].to_dict() if found else None

    def list_recurring_prices(self):
        params: PriceListParams = {"active": True, "type": "recurring", "limit": 100, "expand": ["data.product"]}
        with provider_call("list prices"):
            page = self._v1.prices.list(params=params)
            return [price.to_dict() for price in page.auto_paging_iter()]

    def retrieve_subscription(self, subscription_id):
        params: SubscriptionRetrieveParams = {"expand": SUBSCRIPTION_EXPAND}
        with provider_call("retrieve subscription"):
            return read(self._client, "subscriptions", subscription_id, params)

    def list_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "status": "all", "limit": 100}
        with provider_call("list subscriptions"):
            page = self._v1.subscriptions.list(params=params)
            return [subscription.to_dict() for subscription in page.auto_paging_iter()]

    def list_unended_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "limit": 100, "expand": ["data.latest_invoice"]}
        with provider_call("list unended subscriptions"):
            return [subscription.to_dict() for subscription in self._v1.subscriptions.list(params=params).data]

    def has_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "status": "all", "limit": 1}
        with provider_call("list subscriptions"):
            return bool(self._v1.subscriptions.list(params=params).data)

    def list_active_entitlements(self, customer_id):
        params: ActiveEntitlementListParams = {"customer": customer_id, "limit": 100}
        with provider_call("list active entitlements"):
            return self._v1.entitlements.active_entitlements.list(params=params).to_dict()

    def _now_if_replayed(self, answer):
        """Stripe's answer, or the subscription as it is now when Stripe replayed an earlier answer.

        A replay (``Idempotent-Replayed: true``: a retry of a call that went through) describes the
        subscription as it was then; written as "now", it would roll a newer state back.
        """
        response = answer.last_response
        if response is not None and response.headers.get("Idempotent-Replayed") == "true":
            return self.retrieve_subscription(answer.id)
        return answer.to_dict()

    def update_subscription(self, subscription_id, params: SubscriptionUpdateParams, idempotency_key):
        self._flexible_first(subscription_id)
        expanded: SubscriptionUpdateParams = {**params, "expand": SUBSCRIPTION_EXPAND}
        with provider_call("update subscription"), client_values_refused(params):
            try:
                answer = self._v1.subscriptions.update(subscription_id, params=expanded,
                                                       options={"idempotency_key": idempotency_key})
            except stripe.CardError as exc:
                if params.get("payment_behavior") != "error_if_incomplete":
                    raise
                log.info("update of subscription %s declined: %s", subscription_id, one_line(exc))
                raise ChangeDeclined() from exc
            except stripe.IdempotencyError:
                # The key's request went through before, with parameters decided from a state that
                # has moved on since (a retried upgrade that is now a downgrade): it is done, and
                # doing it again would change twice what the client asked once.
                log.info("update of subscription %s under a used key; reading it as it is now", subscription_id)
                return self.retrieve_subscription(subscription_id)
        return self._now_if_replayed(answer)

    def cancel_subscription(self, subscription_id, idempotency_key=None, prorate=False, invoice_now=False):
        params: SubscriptionCancelParams = {"prorate": True} if prorate else {}
        if invoice_now:
            params["invoice_now"] = True
        if prorate or invoice_now:  # what a cancellation credits; one without either credits nothing
            self._flexible_first(subscription_id)
        with provider_call("cancel subscription"):
            answer = self._v1.subscriptions.cancel(
                subscription_id, params=params, options={"idempotency_key": idempotency_key} if idempotency_key else {})
        return self._now_if_replayed(answer)

    def preview_invoice(self, subscription_id,
                        subscription_details: InvoiceCreatePreviewParamsSubscriptionDetails | None = None,
                        promotion_code=None, automatic_tax=False):
        params: InvoiceCreatePreviewParams = {"subscription": subscription_id}
        if automatic_tax:
            params["automatic_tax"] = {"enabled": True}
        if subscription_details:
            params["subscription_details"] = subscription_details
        if promotion_code:
            params["discounts"] = [{"promotion_code": promotion_code}]
        if subscription_details:  # a change previewed as Stripe will make it: in flexible mode
            self._flexible_first(subscription_id)
        with provider_call("preview invoice"), client_values_refused(subscription_details or {}):
            try:
                return self._v1.invoices.create_preview(params=params).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.code == "invoice_upcoming_none":
                    return None
                raise

    def resume_subscription(self, subscription_id, idempotency_key):
        self._flexible_first(subscription_id)
        with provider_call("resume subscription"):
            params: SubscriptionResumeParams = {"billing_cycle_anchor": {"type": "now"}, "expand": SUBSCRIPTION_EXPAND}
            answer = self._v1.subscriptions.resume(subscription_id, params=params,
                                                   options={"idempotency_key": idempotency_key})
        return self._now_if_replayed(answer)

    def test_clock_time(self, test_clock_id):
        with provider_call("retrieve test clock"):
            return self._v1.test_helpers.test_clocks.retrieve(test_clock_id).frozen_time

    def list_webhook_endpoints(self):
        params: WebhookEndpointListParams = {"limit": 100}
        with provider_call("list webhook endpoints"):
            page = self._v1.webhook_endpoints.list(params=params)
            return [endpoint.to_dict() for endpoint in page.auto_paging_iter()]
