"""One free trial per card (CONTRACT "Changes to the third round", issue 25 item 6).

A trial grants its plan only once its card is saved (``statuses.is_valid``); and the card saved is
checked here against every card that saved a trial before: Stripe gives one card number the same
``card.fingerprint`` within an account (https://docs.stripe.com/api/payment_methods/object#payment_method_object-card-fingerprint),
so five accounts opened with one card get one trial, not five. A trial whose card already had
one ends at once (``trial_end=now``), and the card pays the first period then.

A trial is once per person too (CONTRACT "Additions (sixth round)" -> "Changes to the fifth round"):
the person who starts a subscription (``TrialRedeemer``), for themselves or for an organisation, has
had their first subscription, so no later one they start, whatever it pays for, is a trial. Nothing
here commits.
"""
import logging

from sqlalchemy import exists, select

from app.extensions import db
from app.models import DeletedSubscriber, Subscription, TrialFingerprint, TrialRedeemer
from app.models.account import address_hashes

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


def person_had_a_subscription(person, other_than=None):
    """Whether ``person`` (a ``User`` or its snapshot; ``None``: no one) started a subscription here other than
    ``other_than`` (a Stripe id), for any billable, had one of their own, or had an address of a deleted
    account that subscribed: then nothing they start is a trial."""
    if person is None:
        return False
    hashes = address_hashes(person)
    started = select(TrialRedeemer.provider_subscription).where(TrialRedeemer.redeemer.in_(hashes))
    own = select(Subscription.provider_id).where(Subscription.user_id == person.id)
    if other_than is not None:
        started = started.where(TrialRedeemer.provider_subscription != other_than)
        own = own.where(Subscription.provider_id != other_than)
    return db.session.scalar(select(exists(started) | exists(own) | exists().where(
        DeletedSubscriber.email_sha256.in_(hashes))))


def remember_person(person, provider_subscription):
    """Record that ``person`` (``None``: no one) started the subscription ``provider_subscription`` (a Stripe
    id; ``None``: none), under every address they have had; an address already on record keeps its first."""
    if person is None or not provider_subscription:
        return
    hashes = address_hashes(person)
    known = set(db.session.scalars(select(TrialRedeemer.redeemer).where(TrialRedeemer.redeemer.in_(hashes))))
    db.session.add_all(TrialRedeemer(redeemer=digest, provider_subscription=provider_subscription)
                       for digest in hashes if digest not in known)
