"""The billable's card: promote the paying method to the customer default, mirror brand and last four.

SPEC 6 listener rule 2: the provider saves the method on the subscription only
(``save_default_payment_method=on_subscription``), so without promotion it never reaches the
customer and a just-paid billable shows no card.
"""
import logging
from datetime import UTC, datetime

from app.billing import objects, writer
from app.errors import ProviderRejected

log = logging.getLogger(__name__)


def store_card(billable, payment_method):
    """Copy brand, last four and a card's expiry of ``payment_method`` (a dict, or ``None`` to clear)
    onto the billable."""
    (pm_type, pm_last_four), (pm_exp_month, pm_exp_year) = objects.card_of(payment_method), \
        objects.card_expiry_of(payment_method)
    writer.write_billable(billable, pm_type=pm_type, pm_last_four=pm_last_four, pm_exp_month=pm_exp_month,
                          pm_exp_year=pm_exp_year)


def promote(provider, billable, payment_method_id, customer=None):
    """Make ``payment_method_id`` the customer's default unless it already is; mirror the card.

    ``customer``: the live customer (``retrieve_customer``'s answer) when the caller has it. Return
    whether the default changed. Idempotent: when the method is already the default no
    provider write happens. When the provider refuses the promotion (the method was detached or
    is unknown) the customer's current default card is mirrored instead. Raises
    ``ProviderUnavailable`` (503), so that a webhook fails and is retried.
    """
    customer = customer or provider.retrieve_customer(billable.provider_id)
    default = (customer.get("invoice_settings") or {}).get("default_payment_method")
    if objects.ref_id(default) == payment_method_id and isinstance(default, dict):
        store_card(billable, default)
        return False
    try:
        # Stripe's answer is the updated customer, its new default expanded: the card to mirror.
        updated = provider.set_default_payment_method(billable.provider_id, payment_method_id)
    except ProviderRejected as exc:
        # A refusal is final: failing the webhook would only repeat it on every retry for days
        # and keep the subscription row from ever committing.
        log.warning("payment method %s not promoted for customer %s: %s", payment_method_id, billable.provider_id, exc)
        refresh_from_customer(provider, billable, customer)
        return False
    refresh_from_customer(provider, billable, updated)
    return True


def refresh_from_customer(provider, billable, customer):
    """Mirror the card of ``customer``'s default payment method (an id, an object or absent)."""
    default = (customer.get("invoice_settings") or {}).get("default_payment_method")
    if default is not None and not isinstance(default, dict):
        default = provider.retrieve_payment_method(default)
    store_card(billable, default)


def card_expires_at(billable):
    """Return when the billable's stored card stops working (aware UTC), or ``None`` without a card expiry.

    A card is valid through the last day of its expiry month, so it expires at the first instant
    of the next month (Stripe's ``exp_month``/``exp_year``; no time zone is given, UTC is assumed).
    """
    if billable.pm_exp_month is None or billable.pm_exp_year is None:
        return None
    year, month = divmod(billable.pm_exp_year * 12 + billable.pm_exp_month, 12)
    return datetime(year, month + 1, 1, tzinfo=UTC)
