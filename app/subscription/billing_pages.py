"""What a client app's account page shows without Stripe's portal: invoices, the next one, a card form.

Invoices are read through from Stripe on every request and never stored (SPEC 1: nothing about
billing is local-only, and Stripe is where they change: paid, voided, retried). The card form is
a SetupIntent the client confirms with Stripe.js (``confirmSetup``); what the card then does is
decided by the ``setup_intent.succeeded`` webhook (``app.billing.card_change``), never here.
Nothing here commits.
"""
from flask import current_app

from app.billing.customers import ensure_customer
from app.billing.provider import get_provider
from app.errors import NotFound
from app.idempotency import provider_key
from app.subscription.current import live_subscription


def list_invoices(billable, limit=20, starting_after=None):
    """Return ``(invoices, has_more)``: the billable's invoices as Stripe has them, newest first.

    ``limit`` per page; ``starting_after`` is the id of the last invoice of the previous page
    (Stripe's cursor). A billable without a Stripe customer has none, and Stripe is not asked.
    Raises ``InvalidCursor`` (422), ``ProviderUnavailable`` (503) and ``ProviderRejected`` (502).
    """
    if not billable.provider_id:
        return [], False
    page = get_provider().list_invoices(billable.provider_id, limit, starting_after)
    return page["data"], page["has_more"]


def upcoming_invoice(billable):
    """Return Stripe's preview of the next renewal invoice of the billable's live subscription.

    ``NotFound`` (404) when nothing renews: no live subscription (paused, ended, never paid), a
    cancellation scheduled (``ends_at`` set), or Stripe answering ``invoice_upcoming_none``.
    Raises ``ProviderUnavailable`` (503) and ``ProviderRejected`` (502).
    """
    subscription = live_subscription(billable.subscriptions)
    if subscription is None or subscription.ends_at is not None:
        raise NotFound("Nothing renews: the billable has no subscription that continues past its period.")
    invoice = get_provider().preview_invoice(subscription.provider_id,
                                             automatic_tax=current_app.config["PROVIDER_AUTOMATIC_TAX"])
    if invoice is None:
        raise NotFound("Nothing renews: Stripe has no upcoming invoice for the subscription.")
    return invoice


def setup_intent_secret(billable):
    """Create a SetupIntent (``usage=off_session``) for the billable's customer; return its ``client_secret``.

    The customer is created on first use, as ``/subscription/intent`` does. Under the per-billable lock,
    with a Stripe idempotency key derived from the request's ``Idempotency-Key``. Raises
    ``ProviderUnavailable`` (503) and ``ProviderRejected`` (502).
    """
    billable.lock()
    customer = ensure_customer(billable)
    return get_provider().create_setup_intent(customer, provider_key(billable, "setup-intent"))["client_secret"]
