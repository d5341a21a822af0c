"""Which promotion codes were redeemed, and by whom (``PromotionRedemption``): the database side of
``promotions``, written when a subscription takes a code and read before a code is accepted again.

"Once" means once per person (CONTRACT "Additions (sixth round)" -> "Changes to the fifth round"): a
redemption is kept under the billable's ``redeemer_keys``, every address of the person who acts (the
bearer token's user, whichever billable they act for) and, where the card is known, the card's
fingerprint (``card_key``). Rows outlive accounts and organisations: they hold only hashes.
"""
from types import SimpleNamespace

from flask import g, has_request_context
from sqlalchemy import select

from app.extensions import db
from app.models import PromotionRedemption
from app.models.account import address_hashes, address_sha256
from app.models.user import lock_user


def acting_person():
    """The user whose bearer token made this request (a read-only snapshot), or ``None`` outside one
    (a webhook, the CLI): the person "once per person" counts, whether they act for themselves or an
    organisation."""
    return g.get("current_user") if has_request_context() else None


def lock_person(person=None):
    """Take the person's lock of "once per person" (their user row, ``lock_user``) until the transaction ends;
    return the person (``acting_person()`` unless given; ``None``: no one, and no lock).

    Held from a person's once-per-person decision (``promotions.resolve``, ``redeemed``, the trial's
    ``trials.person_had_a_subscription``) to its record (``remember``, ``trials.remember_person``) and its
    commit, whichever billable they act for: two requests of one person for two organisations, each under
    its own organisation's lock, would otherwise both find nothing taken (PostgreSQL; SQLite has one writer).
    Lock order, everywhere: the person's row first, then the billable's (``Billable.lock``), the order of a
    keyed request (``app.idempotency`` locks its user before the view), an email change and an
    organisation's transfer; never a user's row after an organisation's. For a user's own billable it is
    the same row, taken twice in one transaction."""
    person = acting_person() if person is None else person
    if person is not None:
        lock_user(person)
    return person


def lock_person_of(session):
    """``lock_person`` for whoever opened the Checkout Session ``session`` (a dict: its ``metadata[person]``, a
    user id, ``app.subscription.service.PERSON``; none: no lock), before its billable is locked: its completion
    decides their trial and code (``app.listeners.commit_checkout``), and two completions for two organisations
    would otherwise both find nothing taken."""
    person = str((session.get("metadata") or {}).get("person") or "")
    if person.isdigit():
        lock_person(SimpleNamespace(id=int(person)))


def card_key(fingerprint):
    """The key a card's redemptions are kept under (SHA-256 hex of its fingerprint), or ``None`` without one."""
    return address_sha256(f"card:{fingerprint}") if fingerprint else None


def person_keys(person):
    """The keys a person's redemptions are kept under: every address they have had (``[]`` for ``None``)."""
    return address_hashes(person) if person is not None else []


def keys_of(billable, person=None, fingerprint=None):
    """The billable's ``redeemer_keys``, then the keys of ``person`` and of the card ``fingerprint`` (when given)."""
    return list(dict.fromkeys([*billable.redeemer_keys(), *person_keys(person),
                               *filter(None, [card_key(fingerprint)])]))


def remember(billable, promotion_code_id, provider_subscription, person=None, fingerprint=None):
    """Record that a subscription of ``billable`` took the promotion code (an id), under ``keys_of`` them;
    ``promotions.resolve`` refuses it after to the billable, the person and the card, also once an account
    is deleted and an address registered again (CONTRACT "Changes to the fourth round").

    ``person`` is the one who redeemed it (``acting_person()`` where a request redeems it), never
    guessed here: the subscription writer records, in whatever request or webhook syncs it, the
    billable's keys alone."""
    if promotion_code_id:
        _record(keys_of(billable, person, fingerprint), promotion_code_id, provider_subscription)


def _record(redeemers, promotion_code_id, provider_subscription):
    known = set(db.session.scalars(select(PromotionRedemption.redeemer).where(
        PromotionRedemption.redeemer.in_(redeemers), PromotionRedemption.promotion_code == promotion_code_id)))
    db.session.add_all(PromotionRedemption(redeemer=redeemer, promotion_code=promotion_code_id,
                                           provider_subscription=provider_subscription)
                       for redeemer in dict.fromkeys(redeemers) if redeemer not in known)


def carry_redemptions(user):
    """Record the codes any earlier address of ``user`` redeemed under its current one too (an email change)."""
    hashes = address_hashes(user)
    for code, subscription in db.session.execute(select(
            PromotionRedemption.promotion_code, PromotionRedemption.provider_subscription).where(
            PromotionRedemption.redeemer.in_(hashes[1:])).distinct()).all():
        _record(hashes[:1], code, subscription)


def redeemed(billable, promotion_code_id):
    """Whether the billable or the acting person (``keys_of``) took the code; a first subscription of the
    billable still unpaid (``incomplete``, asked again with the same code) has redeemed nothing yet."""
    taken = _subscriptions_redeeming(keys_of(billable, acting_person()), promotion_code_id)
    unpaid = {s.provider_id for s in billable.subscriptions if s.provider_status == "incomplete"}
    return any(subscription not in unpaid for subscription in taken)


def redeemed_elsewhere(billable, person, fingerprint, promotion_code_id):
    """Whether ``person`` (a ``User`` or ``None``) or the card ``fingerprint`` took the code for a subscription
    of another billable: what a Checkout completion learns only once the card is known. The billable's own
    are left out: ``resolve`` checked them, and one payment attempt at a time leaves no other paid one."""
    keys = [*person_keys(person), *filter(None, [card_key(fingerprint)])]
    own = {s.provider_id for s in billable.subscriptions}
    return any(subscription not in own for subscription in _subscriptions_redeeming(keys, promotion_code_id))


def _subscriptions_redeeming(keys, promotion_code_id):
    """The subscription ids (Stripe's) recorded under any of ``keys`` for the code."""
    if not keys:
        return []
    return db.session.scalars(select(PromotionRedemption.provider_subscription).where(
        PromotionRedemption.redeemer.in_(keys), PromotionRedemption.promotion_code == promotion_code_id)).all()
