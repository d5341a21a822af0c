"""Subscription operations behind the billable-facing endpoints. Nothing here commits."""
import hashlib
import json
import uuid

from flask import current_app
from sqlalchemy import select

from app.auth import profile
from app.billing import objects, plans, portal, promotions, redemptions, state, trials
from app.billing.customers import ensure_customer
from app.billing.provider import get_provider
from app.billing.seats import seat_count
from app.billing.statuses import DUNNING_STATUSES, PAUSED_STATUSES, VALID_STATUSES, waits_for_card
from app.errors import AlreadySubscribed
from app.extensions import db
from app.models import Subscription
from app.subscription import current
from app.usage import plans as usage_plans


def _open_subscription(billable):
    """Return the billable's newest subscription still awaiting its first payment, or ``None``."""
    return max((s for s in billable.subscriptions if s.provider_status == "incomplete"), key=lambda s: s.id,
               default=None)


# The Checkout Sessions one request reads, newest first: each payment attempt started here expires the
# one before it, so at most one made by the service is open, and it is the newest. One made outside the
# service (the dashboard) is expired only while it is the newest: a request's Stripe calls stay bounded.
SESSIONS_READ = 1
# The session's metadata key holding a hash of its terms: a request with the same terms gets that page again.
TERMS = "terms"
# The session's metadata key holding the id of the user who opened it: the person its completion records
# the trial and the promotion code for (``app.listeners.commit_checkout``).
PERSON = "person"


def _cancel_open_subscription(billable, provider, pending):
    """Void the open invoice of ``pending`` (an incomplete subscription's row), then cancel it at Stripe.

    Its client secret would still pay the abandoned invoice: voided first (CONTRACT "Changes to the
    fourth round"), so that a retry after a failed cancel finds it void, not collectable.
    """
    provider.void_latest_invoice(provider.retrieve_subscription(pending.provider_id))
    state.apply_subscription(billable, provider.cancel_subscription(pending.provider_id), state.live_as_of())


def _close_checkout_sessions(billable, provider, keep=None):
    """Expire the billable's newest Checkout Session if open, unless its terms hash is ``keep``; return it when
    kept, else ``None``.

    Two payable pages, or a page and an intent's client secret, would start two subscriptions, and
    a promotion code would be redeemed on each (its once-per-person check runs before either is paid):
    one payment attempt at a time (CONTRACT "Endpoints": two calls never create two subscriptions).
    A session found paid (before its webhook arrived, or before it could be expired: Stripe refuses)
    has its subscription read and written as ``sync`` writes it, and while that one entitles or waits
    for a card, ``AlreadySubscribed`` (409) is raised. Stripe calls: one list, an expiry (and a read
    when refused), a subscription read.
    """
    session = next(iter(provider.list_checkout_sessions(billable.provider_id, SESSIONS_READ)), None) \
        if billable.provider_id else None
    if session is None:
        return None
    if session["status"] == "open":
        if keep is not None and (session.get("metadata") or {}).get(TERMS) == keep:
            return session
        session = provider.expire_checkout_session(session["id"])
    subscription_id = objects.ref_id(session.get("subscription"))
    if session["status"] == "complete" and subscription_id and state.subscription_of(billable, subscription_id) is None:
        current.write(billable, provider.retrieve_subscription(subscription_id))
        _refuse_while_subscribed(billable)
    return None


def create_intent(billable, price, promotion_code=None, code=None):
    """Start (or resume) a subscription to ``price``; return ``(Subscription, client_secret, created)``.

    CONTRACT "/subscription/intent" and SPEC 4 rule 4: with a local incomplete subscription the
    billable's state is synced from the provider first (a payment may have cleared since the last
    webhook). Then an active or trialing subscription raises ``AlreadySubscribed`` (409) and
    nothing is torn down, as does one in dunning (``past_due``, ``unpaid``), ``paused``, or a trial
    whose card is not saved yet; an
    incomplete one for the same price is returned as it is (``created=False``); one for another
    price is cancelled and a new one is created (and any open Checkout Session expired, so that only
    one payment attempt can be paid), a free trial when it is the billable's first
    (``_trial_days``), whose ``client_secret`` is then its pending SetupIntent's. A per-billable
    lock held to the end of the transaction makes concurrent calls create one subscription.
    ``promotion_code`` is a resolved promotion code id (``promotions.resolve``): the new subscription
    carries its discount, and a pending one is reused only with the same, and for an organisation
    only with its member count as quantity; ``code`` is that code as typed. The acting person's lock is
    held too, taken before the billable's (``redemptions.lock_person``), from their trial and the code's
    second check (``promotions.refuse_redeemed``) to their record: once per person across billables.
    Raises ``UnknownPrice`` and ``InvalidPromotionCode`` (422) and ``ProviderUnavailable`` (503).
    """
    metered = usage_plans.metered_for(price)  # the plan's usage prices; a metered price alone is unknown
    provider = get_provider()
    _refuse_second_subscription(billable, provider)
    promotions.refuse_redeemed(billable, promotion_code, code)
    _close_checkout_sessions(billable, provider)
    pending = _open_subscription(billable)
    seats = seat_count(billable)
    if (pending is not None and pending.provider_price == price and _promotion_of(pending) == promotion_code
            and seats in (None, pending.quantity)):
        live = provider.retrieve_subscription(pending.provider_id)
        return pending, objects.client_secret_of(live), False
    if pending is not None:
        _cancel_open_subscription(billable, provider, pending)
    attempt = db.session.scalar(select(db.func.count(Subscription.id)).where(billable.owns(Subscription)))
    trial_days = _trial_days(billable, provider)
    # The trial is in the key: Stripe refuses a key reused with other parameters.
    # Every parameter is in the key (seats too: an organisation's members may change between retries).
    key = (f"subscription-{billable.idempotency_token}-{attempt}-{price}"
           + (f"-trial-{trial_days}" if trial_days else "") + (f"-{promotion_code}" if promotion_code else "")
           + (f"-seats-{seats}" if seats else ""))
    live = provider.create_subscription(ensure_customer(billable), price, key, trial_days=trial_days,
                                        promotion_code=promotion_code,
                                        automatic_tax=current_app.config["PROVIDER_AUTOMATIC_TAX"], quantity=seats,
                                        metered=metered)
    subscription = state.apply_subscription(billable, live, state.live_as_of())
    # Recorded now: a ``once`` discount is gone from the subscription after its first invoice. Kept for the
    # person who asked too, whichever billable they act for (CONTRACT "Changes to the fifth round").
    person = redemptions.acting_person()
    redemptions.remember(billable, promotion_code, live["id"], person)
    trials.remember_person(person, live["id"])
    plans.recompute_plan(billable)
    return subscription, objects.client_secret_of(live), True


def _refuse_second_subscription(billable, provider):
    """Take the acting person's lock, then the per-billable lock (that order: ``redemptions.lock_person``),
    re-read an incomplete subscription, and raise ``AlreadySubscribed`` (409) while the billable has one that
    entitles, or one in dunning, paused or awaiting its trial's card.

    Only the open subscription is read from Stripe, by id (a payment may have cleared since its
    webhook): never the customer's whole history, so a request's Stripe calls stay bounded.
    """
    redemptions.lock_person()
    billable.lock()
    db.session.expire(billable)
    pending = _open_subscription(billable)
    if pending is not None:
        current.write(billable, provider.retrieve_subscription(pending.provider_id))
    _refuse_while_subscribed(billable)


def _refuse_while_subscribed(billable):
    """Raise ``AlreadySubscribed`` (409) while one of the billable's stored subscriptions entitles, is in
    dunning, paused or awaits its trial's card."""
    if plans.entitled_subscription(billable) is not None:
        raise AlreadySubscribed()
    # In dunning, paused or a trial awaiting its card, the subscription is still the billable's: a card
    # pays, resumes or starts it, where a second subscription would bill them twice (or trial twice).
    stuck = next((s for s in billable.subscriptions
                  if s.provider_status in DUNNING_STATUSES | PAUSED_STATUSES or waits_for_card(s)), None)
    if stuck is not None:
        raise AlreadySubscribed.needs_card(stuck.provider_status)


def create_checkout(billable, line, urls, promotion_code=None, code=None):
    """Create a Stripe Checkout Session (``subscription`` mode) for ``line`` (``{"price", "quantity"}``)
    and return it as ``{"id", "url"}``.

    The rules of ``create_intent``: under the per-billable lock, ``AlreadySubscribed`` (409) while a
    subscription entitles or waits for a card, the first-subscription trial (``_trial_days``), and one
    payment attempt at a time: an intent's incomplete subscription is voided and cancelled, and
    another open session is expired (``_close_checkout_sessions``). ``urls`` is ``{"success_url",
    "cancel_url"}`` (checked against ``CHECKOUT_ALLOWED_HOSTS`` by the schema); ``promotion_code`` a
    resolved id (the page takes none of its own), checked again under the person's lock as there; ``code``
    as typed. The same terms again (a retry) get the session still open for them; other terms a new one.
    Raises ``UnknownPrice`` and ``InvalidPromotionCode`` (422) and ``ProviderUnavailable`` (503).
    """
    metered = usage_plans.metered_for(line["price"])
    provider = get_provider()
    _refuse_second_subscription(billable, provider)
    promotions.refuse_redeemed(billable, promotion_code, code)
    # An organisation's seats are read under its lock, held until the session exists and is committed: an
    # invitee accepting meanwhile waits, then finds the session open (409), so every member has a paid seat.
    seats = seat_count(billable)
    if seats:
        line = {**line, "quantity": seats}
    pending = _open_subscription(billable)
    if pending is not None:
        _cancel_open_subscription(billable, provider, pending)
    trial_days = _trial_days(billable, provider)
    automatic_tax = current_app.config["PROVIDER_AUTOMATIC_TAX"]
    # The person is a term: the trial and the code were theirs to have, and their completion records them.
    person = redemptions.acting_person()
    opened_by = {PERSON: str(person.id)} if person is not None else {}
    terms = hashlib.sha256(json.dumps([line, urls, trial_days, promotion_code, automatic_tax, opened_by],
                                      sort_keys=True).encode()).hexdigest()[:32]
    session = _close_checkout_sessions(billable, provider, keep=terms)
    if session is None:
        # A key of its own per request: the same terms again get the open page above, and a key built
        # from the terms would bring back, for 24 hours, a session expired since.
        key = f"checkout-{billable.idempotency_token}-{uuid.uuid4().hex}"
        session = provider.create_checkout_session(ensure_customer(billable), line, urls, key, trial_days=trial_days,
                                                   promotion_code=promotion_code, metered=metered,
                                                   automatic_tax=automatic_tax,
                                                   metadata={TERMS: terms, **opened_by})
    return {"id": session["id"], "url": session["url"]}


def _promotion_of(subscription):
    """The promotion code id of the subscription's discount, or ``None``."""
    return (subscription.discount or {}).get("promotion_code")


def _trial_days(billable, provider):
    """``PROVIDER_TRIAL_DAYS`` for the billable's first subscription, else 0 (CONTRACT "Additions (third round)").

    Any subscription before, in any status, rules a trial out: one stored here, one Stripe has for the
    customer and this database does not (the dashboard's, or before a restore), one of a deleted account
    with the same address (CONTRACT "Accounts"), or one the person asking started for any billable
    (``trials.person_had_a_subscription``, CONTRACT "Changes to the fifth round")."""
    days = current_app.config["PROVIDER_TRIAL_DAYS"]
    if not days or billable.subscriptions or profile.was_deleted_subscriber(billable) \
            or trials.person_had_a_subscription(redemptions.acting_person()):
        return 0
    return 0 if billable.provider_id and provider.has_subscriptions(billable.provider_id) else days


def portal_url(billable, return_url=None):
    """Return the URL of a provider billing portal session for the billable (creating the customer if needed).

    The session runs under the service's portal configuration (``app.billing.portal``): plan changes
    only while the subscription entitles with nothing pending (not in dunning, no ``pending_update``,
    no trial awaiting its card) and has no metered items, so the portal cannot go around ``409
    payment_pending``, dunning or a plan's usage prices.
    """
    provider = get_provider()
    subscription = plans.entitled_subscription(billable)
    # A subscription with metered items is locked too: the portal would swap its licensed price alone.
    plan_changes = subscription is not None and subscription.pending_price is None \
        and subscription.pending_quantity is None and subscription.provider_status in VALID_STATUSES \
        and subscription.licensed_items == list(subscription.items)
    configuration = portal.configuration_id(provider, plan_changes)
    return provider.create_portal_session(ensure_customer(billable), return_url, configuration)

