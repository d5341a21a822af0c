"""The customer side of ``StripeProvider``: customers, payment methods, tax ids, invoices, the portal.

A mixin of ``StripeProvider`` (which sets ``self._v1``, the SDK's ``v1`` service); split out so that
each module stays one resource family, as moto keeps one per service.
"""
import hashlib
import logging
import time
import typing

import stripe
from stripe._v1_services import V1Services
from stripe.params import (
    CustomerCreateParams,
    CustomerCreateTaxIdParams,
    CustomerListTaxIdsParams,
    CustomerRetrieveParams,
    CustomerUpdateParams,
    InvoiceListParams,
    InvoicePayParams,
    SetupIntentCreateParams,
)
from stripe.params.billing_portal import (
    ConfigurationCreateParams,
    ConfigurationListParams,
    ConfigurationUpdateParams,
    SessionCreateParams,
)

from app.billing.provider_errors import InvalidTaxId
from app.billing.stripe_calls import cursor_refused, one_line, provider_call, read
from app.errors import NotFound

log = logging.getLogger("app.billing.stripe_provider")
# Stripe's list of tax id types, as the pinned SDK types CustomerCreateTaxIdParams["type"] (its ``| str`` dropped).
_TAX_ID_TYPES = frozenset(typing.get_args(typing.get_args(CustomerCreateTaxIdParams.__annotations__["type"])[0]))

# Stripe keeps a billing portal session usable for a few minutes; within one window of this many
# seconds a retried or repeated request gets the same session, after it a fresh one.
PORTAL_IDEMPOTENCY_WINDOW = 60


class CustomerCalls:
    """Calls on a customer and what hangs off it; every one may raise ``ProviderUnavailable`` (503)."""

    _client: stripe.StripeClient  # set by StripeProvider
    _v1: V1Services  # the SDK's ``v1`` service, set by StripeProvider

    def create_customer(self, email, name, metadata, idempotency_key):
        params: CustomerCreateParams = {"email": email, "name": name or "", "metadata": metadata}
        with provider_call("create customer"):
            customer = self._v1.customers.create(params=params, options={"idempotency_key": idempotency_key})
        return customer.id

    def retrieve_customer(self, customer_id):
        params: CustomerRetrieveParams = {"expand": ["invoice_settings.default_payment_method"]}
        with provider_call("retrieve customer"):
            return read(self._client, "customers", customer_id, params)

    def set_default_payment_method(self, customer_id, payment_method_id):
        params: CustomerUpdateParams = {"invoice_settings": {"default_payment_method": payment_method_id},
                                        "expand": ["invoice_settings.default_payment_method"]}
        with provider_call("set default payment method"):
            return self._v1.customers.update(customer_id, params=params).to_dict()

    def retrieve_payment_method(self, payment_method_id):
        with provider_call("retrieve payment method"):
            try:
                return read(self._client, "payment_methods", payment_method_id)
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    return None
                raise

    def retrieve_payment_intent(self, payment_intent_id):
        with provider_call("retrieve payment intent"):
            return read(self._client, "payment_intents", payment_intent_id)

    def update_billing_details(self, customer_id, name, address):
        params: CustomerUpdateParams = {"address": address}
        if name is not None:
            params["name"] = name
        with provider_call("update billing details"):
            return self._v1.customers.update(customer_id, params=params).to_dict()

    def list_tax_ids(self, customer_id):
        params: CustomerListTaxIdsParams = {"limit": 100}
        with provider_call("list tax ids"):
            return [tax_id.to_dict() for tax_id in self._v1.customers.tax_ids.list(customer_id, params=params).data]

    def tax_id_types(self):
        return _TAX_ID_TYPES

    def create_tax_id(self, customer_id, kind, value):
        params: CustomerCreateTaxIdParams = {"type": kind, "value": value}  # type: ignore[typeddict-item]
        with provider_call("create tax id"):
            try:
                return self._v1.customers.tax_ids.create(customer_id, params=params).to_dict()
            except stripe.InvalidRequestError as exc:
                if exc.param in ("type", "value") or exc.code == "tax_id_invalid":
                    raise InvalidTaxId.refused(kind, one_line(exc.user_message or exc)) from exc
                raise

    def delete_tax_id(self, customer_id, tax_id):
        with provider_call("delete tax id"):
            try:
                self._v1.customers.tax_ids.delete(customer_id, tax_id)
            except stripe.InvalidRequestError as exc:
                if exc.code == "resource_missing":
                    raise NotFound(f"The customer has no tax id {tax_id!r}.") from exc
                raise

    def list_invoices(self, customer_id, limit, starting_after=None):
        params: InvoiceListParams = {"customer": customer_id, "limit": limit}
        if starting_after:
            params["starting_after"] = starting_after
        with provider_call("list invoices"), cursor_refused(starting_after):
            page = self._v1.invoices.list(params=params)
        return {"data": [invoice.to_dict() for invoice in page.data], "has_more": page.has_more}

    def pay_invoice(self, invoice_id, payment_method_id, idempotency_key):
        params: InvoicePayParams = {"payment_method": payment_method_id, "off_session": True}
        with provider_call("pay invoice"):
            try:
                self._v1.invoices.pay(invoice_id, params=params, options={"idempotency_key": idempotency_key})
            except stripe.CardError as exc:
                log.info("invoice %s not paid with %s: %s", invoice_id, payment_method_id, one_line(exc))
                return False
        return True

    def create_setup_intent(self, customer_id, idempotency_key):
        params: SetupIntentCreateParams = {"customer": customer_id, "usage": "off_session"}
        with provider_call("create setup intent"):
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
        with provider_call("create billing portal session"):
            return self._v1.billing_portal.sessions.create(
                params=params, options={"idempotency_key": f"portal-{customer_id}-{window}-{target}"}).url

    def list_portal_configurations(self):
        params: ConfigurationListParams = {"active": True, "limit": 100}
        with provider_call("list billing portal configurations"):
            return [config.to_dict() for config in self._v1.billing_portal.configurations.list(params=params).data]

    def create_portal_configuration(self, params: ConfigurationCreateParams, idempotency_key):
        with provider_call("create billing portal configuration"):
            return self._v1.billing_portal.configurations.create(
                params=params, options={"idempotency_key": idempotency_key}).id

    def update_portal_configuration(self, configuration_id, params: ConfigurationUpdateParams):
        with provider_call("update billing portal configuration"):
            self._v1.billing_portal.configurations.update(configuration_id, params=params)

    def update_customer_email(self, customer_id, email):
        params: CustomerUpdateParams = {"email": email}
        with provider_call("update customer email"):
            self._v1.customers.update(customer_id, params=params)

    def follow_customer_name(self, customer_id, previous, name):
        with provider_call("retrieve customer"):
            current = read(self._client, "customers", customer_id).get("name") or None
        if current != (previous or None):
            return
        # Stripe clears a field sent as "" (``update_billing_details`` would also send an address).
        params: CustomerUpdateParams = {"name": name or ""}
        with provider_call("update customer name"):
            self._v1.customers.update(customer_id, params=params)

    def delete_customer(self, customer_id):
        with provider_call("delete customer"):
            try:
                self._v1.customers.delete(customer_id)
            except stripe.InvalidRequestError as exc:
                if exc.code != "resource_missing":
                    raise

    def has_paid_invoice(self, customer_id):
        params: InvoiceListParams = {"customer": customer_id, "status": "paid", "limit": 1}
        with provider_call("list paid invoices"):
            return bool(self._v1.invoices.list(params=params).data)

    def void_invoice(self, invoice_id):
        with provider_call("void invoice"):
            try:
                self._v1.invoices.void_invoice(invoice_id)
            except stripe.InvalidRequestError as exc:
                if exc.code not in ("invoice_unexpected_state", "resource_missing"):
                    raise
                log.info("invoice %s not voided: %s", invoice_id, one_line(exc))
