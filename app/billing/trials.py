"""One free trial per card (CONTRACT "Changes to the third round", issue 25 item 6).

A trial grants its plan only once its card is saved (``statuses.is_valid``); and the card saved is
checked here against every card that saved a trial before: Stripe gives one card number the same
``card.fingerprint`` within an account (https://docs.stripe.com/api/payment_methods/object#payment_method_object-card-fingerprint),
so five accounts opened with one card get one trial, not five. A trial whose card already had
one ends at once (``trial_end=now``), and the card pays the first period then. Nothing here commits.
"""
import logging

from sqlalchemy import select

from app.extensions import db
from app.models import TrialFingerprint

log = logging.getLogger(__name__)


def fingerprint_of(payment_method):
    """Return the fingerprint of a payment method (a dict): Stripe gives one per card or account number
    under the method's type (``card``, ``sepa_debit``, ``us_bank_account``, ...), or ``None``."""
    if not isinstance(payment_method, dict):
        return None
    details = payment_method.get(payment_method.get("type") or "card")
    fingerprint = details.get("fingerprint") if isinstance(details, dict) else None
    return fingerprint if isinstance(fingerprint, str) and fingerprint else None


def card_had_a_trial(provider, subscription, method):
    """Whether the card ``method`` (an id) already saved another trial here; else record it for this one.

    ``subscription`` is the trialing row the card is saved for. A method without a fingerprint (a
    Link wallet, say) counts as one that had a trial: one card behind it could otherwise earn any
    number. Raises ``ProviderUnavailable`` (503), so that the webhook is retried.
    """
    fingerprint = fingerprint_of(provider.retrieve_payment_method(method))
    if fingerprint is None:
        log.info("method %s of subscription %s has no fingerprint: the trial ends now", method,
                 subscription.provider_id)
        return True
    owner = db.session.scalar(select(TrialFingerprint.provider_subscription)
                              .where(TrialFingerprint.fingerprint == fingerprint))
    if owner is None:
        db.session.add(TrialFingerprint(fingerprint=fingerprint, provider_subscription=subscription.provider_id))
        return False
    if owner == subscription.provider_id:
        return False
    log.info("card of subscription %s already saved the trial of %s: the trial ends now",
             subscription.provider_id, owner)
    return True
