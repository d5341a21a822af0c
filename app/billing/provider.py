"""The ``SubscriptionProvider`` contract (SPEC 4 "Synchronization entry point").

Views, listeners and commands talk to the payment provider only through this interface; objects
come back as plain dicts shaped as the provider's API documents them. ``sync`` is written once, in
``app.billing.sync`` (``sync_billable(provider, billable)``), on top of the primitive calls: neither the
contract nor its adapter imports a writer (docs/billing.md "Layout").
"""
from abc import abstractmethod

from flask import current_app

from app.billing.provider_billing_mode import BillingModeContract
from app.billing.provider_checkout import CheckoutContract
from app.billing.provider_entitlements import EntitlementsContract
from app.billing.provider_meters import MeterContract
from app.billing.provider_schedules import ScheduleContract


class SubscriptionProvider(CheckoutContract, MeterContract, BillingModeContract, ScheduleContract,
                           EntitlementsContract):
    """What the service needs from a payment provider. Every call may raise ``ProviderUnavailable``."""

    @abstractmethod
    def verify_event(self, payload, signature_header, secrets, tolerance):
        """Return the event dict of a signed delivery; raise ``InvalidSignature`` or ``InvalidJson``.

        ``payload`` is the raw body (bytes); any one of ``secrets`` may have signed it; the
        signature timestamp may differ from now by at most ``tolerance`` whole seconds either way.
        """

    @abstractmethod
    def create_customer(self, email, name, metadata, idempotency_key):
        """Create a customer (``metadata``: Stripe's string-to-string map) and return its id."""

    @abstractmethod
    def retrieve_customer(self, customer_id):
        """Return the customer with ``invoice_settings.default_payment_method`` expanded."""

    @abstractmethod
    def set_default_payment_method(self, customer_id, payment_method_id):
        """Make the payment method the customer's ``invoice_settings.default_payment_method``; return the
        customer, its new default expanded (or named by id, which the caller then reads)."""

    @abstractmethod
    def retrieve_payment_method(self, payment_method_id):
        """Return the payment method, or ``None`` when the provider has no such method (any more)."""

    @abstractmethod
    def retrieve_payment_intent(self, payment_intent_id):
        """Return the payment intent."""

    @abstractmethod
    def create_subscription(self, customer_id, price, idempotency_key, trial_days=0, promotion_code=None,
                            automatic_tax=False, quantity=None, metered=()):
        """Create a subscription awaiting payment, with an item for ``price`` (``quantity`` seats, ``None``:
        Stripe's 1) and one (no quantity) per metered price id of ``metered``; ``latest_invoice.confirmation_secret``
        and ``pending_setup_intent`` expanded; discounted by the promotion code id ``promotion_code``;
        taxed by Stripe Tax with ``automatic_tax``. ``payment_behavior=default_incomplete`` and
        ``payment_settings.save_default_payment_method=on_subscription`` (CONTRACT). With ``trial_days``
        (> 0) a free trial (``trialing``) whose ``pending_setup_intent`` collects the card, and which
        pauses at the trial's end when no card came (``trial_settings.end_behavior.missing_payment_method=pause``).
        """

    @abstractmethod
    def retrieve_price(self, price_id):
        """Return the price (``unit_amount`` in minor units, ``currency``, ``recurring``, ``active``).

        Raises ``UnknownPrice`` (422) when the provider has no such price.
        """

    @abstractmethod
    def update_billing_details(self, customer_id, name, address):
        """Set the customer's ``name`` (``None``: left as it is) and ``address`` (Stripe's fields); return it."""

    @abstractmethod
    def list_tax_ids(self, customer_id):
        """Return the customer's tax ids (Stripe's TaxId dicts), newest first."""

    @abstractmethod
    def tax_id_types(self):
        """The tax id types the provider knows (Stripe's ``eu_vat``, ``gb_vat``, ...), a frozenset; no call."""

    @abstractmethod
    def create_tax_id(self, customer_id, kind, value):
        """Add a tax id of Stripe's ``kind`` (``eu_vat``, ...) to the customer; return it.

        Raises ``InvalidTaxId`` (422) when Stripe refuses the type or the value.
        """

    @abstractmethod
    def delete_tax_id(self, customer_id, tax_id):
        """Delete the customer's tax id; raises ``NotFound`` (404) when the customer has none with that id."""

    @abstractmethod
    def find_promotion_code(self, code):
        """Return the active promotion code ``code`` (case-insensitive, as Stripe matches it) with
        ``promotion.coupon`` expanded, or ``None`` when no active one has it."""

    @abstractmethod
    def list_recurring_prices(self):
        """Return every active recurring price, each with its ``product`` expanded (a dict).

        Stripe's ``GET /v1/prices?active=true&type=recurring``, all pages; ``unit_amount`` in minor units.
        """

    @abstractmethod
    def retrieve_subscription(self, subscription_id):
        """Return the live subscription with ``latest_invoice.confirmation_secret`` and ``pending_setup_intent``."""

    @abstractmethod
    def list_subscriptions(self, customer_id):
        """Return every subscription of the customer, whatever its status (``sync``: support's full rebuild)."""

    @abstractmethod
    def list_unended_subscriptions(self, customer_id):
        """Return the customer's subscriptions not yet ended, ``latest_invoice`` expanded: one page of at
        most 100 (Stripe's list without ``status``), never the customer's whole history."""

    @abstractmethod
    def has_subscriptions(self, customer_id):
        """Return whether the customer ever had a subscription, in any status: one page of one."""

    @abstractmethod
    def has_paid_invoice(self, customer_id):
        """Return whether the customer has a paid invoice: one page of one (a promotion code's
        ``restrictions.first_time_transaction``)."""

    @abstractmethod
    def void_invoice(self, invoice_id):
        """Void an open invoice, which cancels its PaymentIntent: nothing can pay it after.

        An invoice no longer open (paid, voided, deleted) is left as it is. Stripe's
        ``POST /v1/invoices/{id}/void`` (https://docs.stripe.com/api/invoices/void).
        """

    @abstractmethod
    def update_subscription(self, subscription_id, params, idempotency_key):
        """Update the subscription with Stripe's update ``params`` and return it as Stripe answered.

        ``latest_invoice.confirmation_secret`` is expanded (a change's unpaid invoice is confirmed
        with it). Raises ``UnknownPrice`` (422) when the provider knows no price given in ``items``,
        ``ChangeDeclined`` when Stripe refused it for a declined charge (``error_if_incomplete``).
        """

    @abstractmethod
    def cancel_subscription(self, subscription_id, idempotency_key=None, prorate=False, invoice_now=False):
        """Cancel the subscription now and return it.

        ``prorate`` credits the unused time; ``invoice_now`` invoices now the metered usage not yet
        invoiced and pending prorations (Stripe's ``DELETE /v1/subscriptions/{id}`` parameters).
        """

    @abstractmethod
    def preview_invoice(self, subscription_id, subscription_details=None, promotion_code=None, automatic_tax=False):
        """Return the invoice the subscription's change (``subscription_details``) or next renewal makes,
        discounted by the promotion code id ``promotion_code`` instead of the subscription's discounts,
        taxed by Stripe Tax with ``automatic_tax``.

        Stripe's ``POST /v1/invoices/create_preview``; amounts in minor units. ``None`` when nothing
        renews (Stripe's ``invoice_upcoming_none``).
        """

    @abstractmethod
    def resume_subscription(self, subscription_id, idempotency_key):
        """Resume a ``paused`` subscription: a new period from now, charged at once; return it.

        Stripe's ``POST /v1/subscriptions/{id}/resume`` with ``billing_cycle_anchor={"type": "now"}``; paid,
        it is ``active``, declined ``past_due``.
        """

    @abstractmethod
    def list_invoices(self, customer_id, limit, starting_after=None):
        """Return ``{"data": [invoice], "has_more"}``: the customer's invoices, newest first.

        Stripe's own page: ``limit`` (1-100) after the invoice ``starting_after`` (an id). Raises
        ``InvalidCursor`` (422) when Stripe knows no such invoice in the list.
        """

    @abstractmethod
    def pay_invoice(self, invoice_id, payment_method_id, idempotency_key):
        """Charge the open invoice with the payment method now, off-session; return whether it was paid.

        A declined charge, or one that needs authentication, is ``False``: Stripe announces it
        with ``invoice.payment_failed``, and the invoice stays open.
        """

    @abstractmethod
    def create_setup_intent(self, customer_id, idempotency_key):
        """Create a SetupIntent that saves a card of the customer for off-session charges; return it."""

    @abstractmethod
    def create_portal_session(self, customer_id, return_url, configuration=None):
        """Return the URL of a billing portal session for the customer under the portal ``configuration`` (an id)."""

    @abstractmethod
    def list_portal_configurations(self):
        """Return the active billing portal configurations (one page of at most 100)."""

    @abstractmethod
    def create_portal_configuration(self, params, idempotency_key):
        """Create a billing portal configuration with Stripe's create ``params``; return its id."""

    @abstractmethod
    def update_portal_configuration(self, configuration_id, params):
        """Update a billing portal configuration with Stripe's update ``params``."""

    @abstractmethod
    def test_clock_time(self, test_clock_id):
        """Return the frozen time (Unix seconds) of a test clock: "now" for the objects on it (test mode)."""

    @abstractmethod
    def list_webhook_endpoints(self):
        """Return the webhook endpoints registered at the provider."""

    @abstractmethod
    def update_customer_email(self, customer_id, email):
        """Set the customer's ``email`` (where Stripe sends its receipts and invoices)."""

    @abstractmethod
    def follow_customer_name(self, customer_id, previous, name):
        """Rename the customer (``name``: printed on its invoices and receipts; ``None`` clears it) while its name is
        still ``previous``, the profile's: one given by ``PUT /subscription/billing-details`` (a company's, for its
        invoices) is the customer's own and stays. One read, then at most one write."""

    @abstractmethod
    def delete_customer(self, customer_id):
        """Delete the customer at the provider, which also cancels its subscriptions at once.

        A customer the provider has already deleted (or never had) counts as deleted: a retried
        account deletion finds it gone.
        """

    def void_latest_invoice(self, live):
        """Void the open ``latest_invoice`` of ``live`` (a subscription dict, ``latest_invoice`` expanded): its
        client secret pays nothing once the subscription is dropped (CONTRACT "Changes to the fourth round").
        Cancelling alone only stops automatic collection (https://docs.stripe.com/api/subscriptions/cancel)."""
        invoice = live.get("latest_invoice")
        if isinstance(invoice, dict) and invoice.get("status") == "open":
            self.void_invoice(invoice["id"])


def get_provider():
    """Return the app's ``SubscriptionProvider``, built on first use by the factory ``create_app`` registers."""
    extensions = current_app.extensions
    provider = extensions.get("subscription_provider")
    if provider is None:
        # setdefault: of two threads building at once (the usage delivery worker's), both keep the first.
        provider = extensions.setdefault("subscription_provider", extensions["subscription_provider_factory"]())
    return provider
