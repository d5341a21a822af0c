"""``StripeProvider``: the ``SubscriptionProvider`` contract on the official ``stripe`` SDK.

The only module that imports ``stripe``. Network failures, rate limits and Stripe's 5xx become
``ProviderUnavailable`` (503); a request Stripe refuses (its 4xx) becomes ``ProviderRejected``
(502) unless a method maps it more precisely; the SDK retries idempotent requests itself
(``max_network_retries``) and every create carries an idempotency key.
"""
import hashlib
import logging
import time
import typing
from contextlib import contextmanager

import requests
import stripe
from stripe.params import (
    CustomerCreateParams,
    CustomerCreateTaxIdParams,
    CustomerListTaxIdsParams,
    CustomerRetrieveParams,
    CustomerUpdateParams,
    InvoiceCreatePreviewParams,
    InvoiceCreatePreviewParamsSubscriptionDetails,
    InvoiceListParams,
    InvoicePayParams,
    PriceListParams,
    PromotionCodeListParams,
    SetupIntentCreateParams,
    SubscriptionCancelParams,
    SubscriptionCreateParams,
    SubscriptionListParams,
    SubscriptionResumeParams,
    SubscriptionRetrieveParams,
    SubscriptionUpdateParams,
    WebhookEndpointListParams,
)
from stripe.params.billing_portal import (
    ConfigurationCreateParams,
    ConfigurationListParams,
    ConfigurationUpdateParams,
    SessionCreateParams,
)
from stripe.params.checkout import SessionCreateParams as CheckoutSessionCreateParams

from app import jsonbody
from app.billing import stripe_meters
from app.billing.objects import CHECKOUT_ORIGIN
from app.billing.provider import ChangeDeclined, InvalidProrationDate, InvalidTaxId, SubscriptionProvider
from app.errors import (
    InvalidJson,
    InvalidSignature,
    NotFound,
    ProviderRejected,
    ProviderUnavailable,
    UnknownPrice,
)
from app.pagination import InvalidCursor

log = logging.getLogger(__name__)
# Stripe's list of tax id types, as the pinned SDK types CustomerCreateTaxIdParams["type"] (its ``| str`` dropped).
_TAX_ID_TYPES = frozenset(typing.get_args(typing.get_args(CustomerCreateTaxIdParams.__annotations__["type"])[0]))

# The client secrets a client confirms: the first invoice's payment, or a trial's SetupIntent.
# Its discounts with their coupons: the row shows them (CONTRACT "Selling": Subscription ``discount``).
SUBSCRIPTION_EXPAND = ["latest_invoice.confirmation_secret", "pending_setup_intent", "discounts.source.coupon"]

# Stripe keeps a billing portal session usable for a few minutes; within one window of this many
# seconds a retried or repeated request gets the same session, after it a fresh one.
PORTAL_IDEMPOTENCY_WINDOW = 60


def _one_line(exc):
    # The SDK's messages span several lines ("If this problem persists, let us know..."); a log
    # record is one line, so that log readers and a command's output stay line by line.
    return " ".join(str(exc).split())


def _signed_at(signature_header):
    """The header's first ``t=`` as an int, read as the SDK reads it (it verified the header, so there is one)."""
    items = [item.split("=", 2) for item in signature_header.split(",")]
    return int(next(item[1] for item in items if item[0] == "t"))


def _unavailable(exc):
    """Return the ``ProviderUnavailable`` that says what happened: no answer in time, no connection, a 5xx..."""
    if isinstance(exc, stripe.RateLimitError):
        return ProviderUnavailable.rate_limited()
    if isinstance(exc, stripe.AuthenticationError):
        return ProviderUnavailable.key_refused()
    if isinstance(exc, stripe.APIError):
        return ProviderUnavailable.server_error(exc.http_status)
    # An APIConnectionError: the SDK raises it from the HTTP library's own exception.
    return ProviderUnavailable() if isinstance(exc.__cause__, requests.Timeout) else ProviderUnavailable.unreachable()


@contextmanager
def _provider_call(what):
    """Map the SDK's errors onto the error tree: ``ProviderUnavailable`` or ``ProviderRejected``."""
    try:
        yield
    except (stripe.APIConnectionError, stripe.RateLimitError, stripe.APIError, stripe.AuthenticationError) as exc:
        log.warning("provider call failed: %s: %s", what, _one_line(exc))
        raise _unavailable(exc) from exc
    except stripe.StripeError as exc:
        # InvalidRequestError and the other 4xx: retrying the same request cannot help.
        log.warning("provider refused a request: %s: %s", what, _one_line(exc))
        raise ProviderRejected.for_call(what, exc.code) from exc


@contextmanager
def _client_values_refused(params):
    """Map Stripe's refusal of a price in ``params["items"]`` to ``UnknownPrice`` (422), and of the
    client's ``proration_date`` (outside the current period) to ``InvalidProrationDate`` (422)."""
    try:
        yield
    except stripe.InvalidRequestError as exc:
        prices = [item.get("price") for item in params.get("items") or () if item.get("price")]
        if exc.param and "price" in exc.param and prices:
            raise UnknownPrice.for_price(prices[0]) from exc
        if exc.param and exc.param.endswith("proration_date") and "proration_date" in params:
            raise InvalidProrationDate.refused() from exc
        raise


@contextmanager
def _cursor_refused(starting_after):
    """Map Stripe's refusal of a list's ``starting_after`` to ``InvalidCursor`` (422)."""
    try:
        yield
    except stripe.InvalidRequestError as exc:
        if starting_after and exc.param == "starting_after":
            raise InvalidCursor.for_id(starting_after) from exc
        raise


class StripeProvider(SubscriptionProvider):
    def __init__(self, api_key, api_base=None, timeout=5, max_network_retries=1):
        """``timeout`` is per HTTP attempt, in seconds; ``api_base`` points the SDK at the emulator."""
        self._client = stripe.StripeClient(
            api_key or "sk_test_unset",
            base_addresses={"api": api_base} if api_base else None,
            max_network_retries=max_network_retries,
            http_client=stripe.RequestsClient(timeout=timeout),
        )
        self._v1 = self._client.v1

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
        age = int(time.time()) - _signed_at(signature_header)
        if age > tolerance:
            raise InvalidSignature()
        if -age > tolerance:
            raise InvalidSignature("The webhook signature timestamp is in the future.")
        return jsonbody.loads(payload)

    def create_customer(self, email, name, user_id, idempotency_key):
        params: CustomerCreateParams = {"email": email, "name": name or "", "metadata": {"user_id": str(user_id)}}
        with _provider_call("create customer"):
            customer = self._v1.customers.create(params=params, options={"idempotency_key": idempotency_key})
        return customer.id

    def retrieve_customer(self, customer_id):
        params: CustomerRetrieveParams = {"expand": ["invoice_settings.default_payment_method"]}
        with _provider_call("retrieve customer"):
            return self._v1.customers.retrieve(customer_id, params=params).to_dict()

    def set_default_payment_method(self, customer_id, payment_method_id):
        params: CustomerUpdateParams = {"invoice_settings": {"default_payment_method": payment_method_id}}
        with _provider_call("set default payment method"):
            self._v1.customers.update(customer_id, params=params)

    def retrieve_payment_method(self, payment_method_id):
        with _provider_call("retrieve payment method"):
            try:
                return self._v1.payment_methods.retrieve(payment_method_id).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    return None
                raise

    def retrieve_payment_intent(self, payment_intent_id):
        with _provider_call("retrieve payment intent"):
            return self._v1.payment_intents.retrieve(payment_intent_id).to_dict()

    def create_subscription(self, customer_id, price, idempotency_key, trial_days=0, promotion_code=None,
                            automatic_tax=False, metered=()):
        params: SubscriptionCreateParams = {
            "customer": customer_id,
            "items": [{"price": price}] + [{"price": other} for other in metered],
            "payment_behavior": "default_incomplete",
            "payment_settings": {"save_default_payment_method": "on_subscription"},
            "expand": SUBSCRIPTION_EXPAND,
        }
        if promotion_code:
            params["discounts"] = [{"promotion_code": promotion_code}]
        if automatic_tax:
            params["automatic_tax"] = {"enabled": True}
        if trial_days:
            params["trial_period_days"] = trial_days
            params["trial_settings"] = {"end_behavior": {"missing_payment_method": "pause"}}
        with _provider_call("create subscription"), _client_values_refused(params):
            subscription = self._v1.subscriptions.create(params=params, options={"idempotency_key": idempotency_key})
        return subscription.to_dict()

    def retrieve_price(self, price_id):
        with _provider_call("retrieve price"):
            try:
                return self._v1.prices.retrieve(price_id).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    raise UnknownPrice.for_price(price_id) from exc
                raise

    def create_checkout_session(self, customer_id, line, urls, idempotency_key, trial_days=0, promotion_code=None,
                                metered=(), automatic_tax=False):
        params: CheckoutSessionCreateParams = {
            "mode": "subscription", "customer": customer_id,
            "line_items": [{"price": line["price"], "quantity": line["quantity"]}]
            + [{"price": other} for other in metered],
            "success_url": urls["success_url"], "cancel_url": urls["cancel_url"],
        }
        # Stripe's own code box stays off (no ``allow_promotion_codes``): a code typed there would
        # skip the service's rules (once per person, restrictions); one reaches Checkout only resolved.
        if promotion_code:
            params["discounts"] = [{"promotion_code": promotion_code}]
        # Marked, so that its creation's webhook leaves its trial to the session's completion (CommitPlan).
        params["subscription_data"] = {"metadata": {"origin": CHECKOUT_ORIGIN}}
        if trial_days:
            params["subscription_data"]["trial_period_days"] = trial_days
        if automatic_tax:
            # Stripe Tax needs the customer's address: the page collects it onto the customer.
            params["automatic_tax"] = {"enabled": True}
            params["customer_update"] = {"address": "auto"}
        with _provider_call("create checkout session"), _client_values_refused({"items": [line]}):
            return self._v1.checkout.sessions.create(
                params=params, options={"idempotency_key": idempotency_key}).to_dict()

    def update_billing_details(self, customer_id, name, address):
        params: CustomerUpdateParams = {"address": address}
        if name is not None:
            params["name"] = name
        with _provider_call("update billing details"):
            return self._v1.customers.update(customer_id, params=params).to_dict()

    def list_tax_ids(self, customer_id):
        params: CustomerListTaxIdsParams = {"limit": 100}
        with _provider_call("list tax ids"):
            return [tax_id.to_dict() for tax_id in self._v1.customers.tax_ids.list(customer_id, params=params).data]

    def tax_id_types(self):
        return _TAX_ID_TYPES

    def create_tax_id(self, customer_id, kind, value):
        params: CustomerCreateTaxIdParams = {"type": kind, "value": value}  # type: ignore[typeddict-item]
        with _provider_call("create tax id"):
            try:
                return self._v1.customers.tax_ids.create(customer_id, params=params).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.param in ("type", "value") or exc.code == "tax_id_invalid":
                    raise InvalidTaxId.refused(kind, _one_line(exc.user_message or exc)) from exc
                raise

    def delete_tax_id(self, customer_id, tax_id):
        with _provider_call("delete tax id"):
            try:
                self._v1.customers.tax_ids.delete(customer_id, tax_id)
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    raise NotFound(f"The customer has no tax id {tax_id!r}.") from exc
                raise

    def find_promotion_code(self, code):
        params: PromotionCodeListParams = {"code": code, "active": True, "limit": 1,
                                           "expand": ["data.promotion.coupon"]}
        with _provider_call("find promotion code"):
            found = self._v1.promotion_codes.list(params=params).data
        return found[0].to_dict() if found else None

    def list_recurring_prices(self):
        params: PriceListParams = {"active": True, "type": "recurring", "limit": 100, "expand": ["data.product"]}
        with _provider_call("list prices"):
            page = self._v1.prices.list(params=params)
            return [price.to_dict() for price in page.auto_paging_iter()]

    def retrieve_subscription(self, subscription_id):
        params: SubscriptionRetrieveParams = {"expand": SUBSCRIPTION_EXPAND}
        with _provider_call("retrieve subscription"):
            return self._v1.subscriptions.retrieve(subscription_id, params=params).to_dict()

    def list_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "status": "all", "limit": 100}
        with _provider_call("list subscriptions"):
            page = self._v1.subscriptions.list(params=params)
            return [subscription.to_dict() for subscription in page.auto_paging_iter()]

    def list_unended_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "limit": 100, "expand": ["data.latest_invoice"]}
        with _provider_call("list unended subscriptions"):
            return [subscription.to_dict() for subscription in self._v1.subscriptions.list(params=params).data]

    def has_subscriptions(self, customer_id):
        params: SubscriptionListParams = {"customer": customer_id, "status": "all", "limit": 1}
        with _provider_call("list subscriptions"):
            return bool(self._v1.subscriptions.list(params=params).data)

    def has_paid_invoice(self, customer_id):
        params: InvoiceListParams = {"customer": customer_id, "status": "paid", "limit": 1}
        with _provider_call("list paid invoices"):
            return bool(self._v1.invoices.list(params=params).data)

    def void_invoice(self, invoice_id):
        with _provider_call("void invoice"):
            try:
                self._v1.invoices.void_invoice(invoice_id)
            except stripe.InvalidRequestError as exc:
                if exc.code not in ("invoice_unexpected_state", "resource_missing"):
                    raise
                log.info("invoice %s not voided: %s", invoice_id, _one_line(exc))

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
        expanded: SubscriptionUpdateParams = {**params, "expand": SUBSCRIPTION_EXPAND}
        with _provider_call("update subscription"), _client_values_refused(params):
            try:
                answer = self._v1.subscriptions.update(subscription_id, params=expanded,
                                                       options={"idempotency_key": idempotency_key})
            except stripe.CardError as exc:
                if params.get("payment_behavior") != "error_if_incomplete":
                    raise
                log.info("update of subscription %s declined: %s", subscription_id, _one_line(exc))
                raise ChangeDeclined() from exc
            except stripe.IdempotencyError:
                # The key's request went through before, with parameters decided from a state that
                # has moved on since (a retried upgrade that is now a downgrade): it is done, and
                # doing it again would change twice what the client asked once.
                log.info("update of subscription %s under a used key; reading it as it is now", subscription_id)
                return self.retrieve_subscription(subscription_id)
        return self._now_if_replayed(answer)

    def cancel_subscription(self, subscription_id, idempotency_key=None, prorate=False):
        params: SubscriptionCancelParams = {"prorate": True} if prorate else {}
        with _provider_call("cancel subscription"):
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
        with _provider_call("preview invoice"), _client_values_refused(subscription_details or {}):
            try:
                return self._v1.invoices.create_preview(params=params).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.code == "invoice_upcoming_none":
                    return None
                raise

    def resume_subscription(self, subscription_id, idempotency_key):
        with _provider_call("resume subscription"):
            params: SubscriptionResumeParams = {"billing_cycle_anchor": {"type": "now"}, "expand": SUBSCRIPTION_EXPAND}
            answer = self._v1.subscriptions.resume(subscription_id, params=params,
                                                   options={"idempotency_key": idempotency_key})
        return self._now_if_replayed(answer)

    def list_invoices(self, customer_id, limit, starting_after=None):
        params: InvoiceListParams = {"customer": customer_id, "limit": limit}
        if starting_after:
            params["starting_after"] = starting_after
        with _provider_call("list invoices"), _cursor_refused(starting_after):
            page = self._v1.invoices.list(params=params)
        return {"data": [invoice.to_dict() for invoice in page.data], "has_more": page.has_more}

    def pay_invoice(self, invoice_id, payment_method_id, idempotency_key):
        params: InvoicePayParams = {"payment_method": payment_method_id, "off_session": True}
        with _provider_call("pay invoice"):
            try:
                self._v1.invoices.pay(invoice_id, params=params, options={"idempotency_key": idempotency_key})
            except stripe.CardError as exc:
                log.info("invoice %s not paid with %s: %s", invoice_id, payment_method_id, _one_line(exc))
                return False
        return True

    def create_setup_intent(self, customer_id, idempotency_key):
        params: SetupIntentCreateParams = {"customer": customer_id, "usage": "off_session"}
        with _provider_call("create setup intent"):
            return self._v1.setup_intents.create(params=params, options={"idempotency_key": idempotency_key}).to_dict()

    def create_portal_session(self, customer_id, return_url, configuration=None):
        """Create a session under a key derived from the customer, the return URL, the configuration
        and a time window.

        A key fixed per customer would replay one session, long expired, for the day Stripe keeps
        keys; with the window a double click or retry gets one session, a later request a new one.
        """
        params: SessionCreateParams = {"customer": customer_id}
        if return_url:
            params["return_url"] = return_url
        if configuration:
            params["configuration"] = configuration
        window = int(time.time()) // PORTAL_IDEMPOTENCY_WINDOW
        target = hashlib.sha256(f"{return_url or ''} {configuration or ''}".encode()).hexdigest()[:16]
        with _provider_call("create billing portal session"):
            return self._v1.billing_portal.sessions.create(
                params=params, options={"idempotency_key": f"portal-{customer_id}-{window}-{target}"}).url

    def list_portal_configurations(self):
        params: ConfigurationListParams = {"active": True, "limit": 100}
        with _provider_call("list billing portal configurations"):
            return [config.to_dict() for config in self._v1.billing_portal.configurations.list(params=params).data]

    def create_portal_configuration(self, params: ConfigurationCreateParams, idempotency_key):
        with _provider_call("create billing portal configuration"):
            return self._v1.billing_portal.configurations.create(
                params=params, options={"idempotency_key": idempotency_key}).id

    def update_portal_configuration(self, configuration_id, params: ConfigurationUpdateParams):
        with _provider_call("update billing portal configuration"):
            self._v1.billing_portal.configurations.update(configuration_id, params=params)

    def test_clock_time(self, test_clock_id):
        with _provider_call("retrieve test clock"):
            return self._v1.test_helpers.test_clocks.retrieve(test_clock_id).frozen_time

    def list_webhook_endpoints(self):
        params: WebhookEndpointListParams = {"limit": 100}
        with _provider_call("list webhook endpoints"):
            page = self._v1.webhook_endpoints.list(params=params)
            return [endpoint.to_dict() for endpoint in page.auto_paging_iter()]

    def update_customer_email(self, customer_id, email):
        params: CustomerUpdateParams = {"email": email}
        with _provider_call("update customer email"):
            self._v1.customers.update(customer_id, params=params)

    def delete_customer(self, customer_id):
        with _provider_call("delete customer"):
            try:
                self._v1.customers.delete(customer_id)
            except stripe.InvalidRequestError as exc:
                if exc.code != "resource_missing":
                    raise

    def list_active_meters(self):
        return stripe_meters.list_active(self._v1)

    def create_meter_event(self, event_name, payload, identifier, timestamp):
        return stripe_meters.create_event(self._v1, event_name, payload, identifier, timestamp)

    def meter_event_summary(self, meter_id, customer_id, start, end):
        return stripe_meters.summary(self._v1, meter_id, customer_id, start, end)
