"""Profile, email change and account deletion (CONTRACT "Accounts"). Nothing here commits.

Email change and deletion are provider-first, as every billing write: Stripe is changed first,
and a Stripe failure (``ProviderUnavailable``, 503) leaves every local row as it was.
"""
import logging

from flask import current_app
from sqlalchemy import delete, exists, select

from app.auth.recovery import check_password, refuse_unbounded_email_move
from app.auth.service import normalise_email
from app.billing import customers, objects, prices
from app.billing.provider import get_provider
from app.billing.statuses import TERMINAL_STATUSES
from app.errors import EmailTaken
from app.extensions import db
from app.models import DeletedSubscriber, PasswordResetRequest, Subscription, User
from app.models.account import address_hashes
from app.models.usage import abandon_pending
from app.models.user import lock_user
from app.notifications import notify_account
from app.observability import metrics
from app.signals import account_deleting, customer_deleting, deletion_requested

log = logging.getLogger(__name__)


def was_deleted_subscriber(billable):
    """Return whether a deleted account that ever subscribed had any address ``billable`` has had (no second
    trial): its ``redeemer_keys``, every address for a user (an organisation's id is never reused)."""
    return db.session.scalar(select(exists().where(DeletedSubscriber.email_sha256.in_(billable.redeemer_keys()))))


def update_profile(user, name):
    """Set ``user``'s ``name`` (``None`` clears it); return the user.

    The name is their Stripe customer's ``name`` (``stripe_name``, on its invoices) until billing details
    give the customer one of its own: with a customer, followed there first (``follow_customer_name``: two
    calls at most), so ``ProviderUnavailable`` (503) changes nothing here.
    """
    lock_user(user)
    # Read under the lock: a customer made meanwhile, and the name Stripe has, are what came before.
    db.session.refresh(user)
    customers.follow(user, name=name)
    user.name = name
    return user


def request_email_change(user, email, password):
    """Queue the move of ``user`` to ``email``: a link to the new address, a notice to the current one.

    The address changes only when the link is opened (``recovery.verify_email``). Raises
    ``WrongPassword`` (403), ``EmailTaken`` (409) for an address registered to anyone, the user included,
    and ``OrganizationsFollowEmail`` (409) when the link would be refused for the organisations whose
    customer mails the user (``recovery.refuse_unbounded_email_move``): told before a link is sent.
    """
    check_password(user, password)
    email = normalise_email(email)
    if email == user.email:
        raise EmailTaken.yours()
    if db.session.scalar(select(User.id).where(User.email == email)) is not None:
        raise EmailTaken()
    refuse_unbounded_email_move(user)
    notify_account(user, "email_change", {"email": email})
    notify_account(user, "email_change_requested", {"new_email": email})


def delete_account(user, password):
    """Delete ``user`` and everything of theirs, Stripe first; raise ``WrongPassword`` (403).

    Once the password is checked, ``deletion-requested`` then ``account-deleting`` are sent
    (``app.signals``; ``app.listeners.deletions``), before anything is deleted: ``UsagePending`` (409)
    while more of the user's accepted usage waits for delivery than the deletion sends itself, refused
    before any Stripe call; then the organisations' rules (``organizations.service.release_account``, which may
    refuse with 409 before any Stripe call): a seat held for the user in an organisation (an invitation they
    accepted, its charge declined) withdrawn first, its invoice voided at Stripe (paid later, it would charge for
    nobody), then the organisations they are alone in deleted and the others left.

    At Stripe every subscription not yet ended is cancelled now (``delete_customer``: a paid period's
    metered usage so far is invoiced, as ``POST /subscription/cancel`` now does) and the customer
    deleted; ``ProviderUnavailable`` (503) there deletes nothing here (a retry finds what was done: a
    cancelled subscription is skipped, a deleted customer counts as deleted). Then one DELETE of the
    user: the foreign keys cascade to tokens, rotated tokens, notifications and their deliveries,
    idempotency keys, subscriptions and their items. If the account ever subscribed (a subscription
    here or at Stripe), the SHA-256 of every address it had is kept so
    that the address registered again gets no free trial.
    """
    check_password(user, password)
    # The person first, then the organisations the deletion leaves or holds a seat in, as every billing path locks
    # the person before the billable: in the other order it could deadlock with the person's Checkout completion.
    lock_user(user)
    sender = current_app._get_current_object()
    deletion_requested.send(sender, billable=user)
    account_deleting.send(sender, user=user)
    ever_subscribed = db.session.scalar(select(exists().where(Subscription.user_id == user.id)))
    if user.provider_id:
        ever_subscribed = delete_customer(user) or ever_subscribed
    if ever_subscribed:
        # Every address the account had: the one it left by an email change gets no second trial either.
        known = set(db.session.scalars(select(DeletedSubscriber.email_sha256).where(
            DeletedSubscriber.email_sha256.in_(address_hashes(user)))))
        db.session.add_all(DeletedSubscriber(email_sha256=digest) for digest in address_hashes(user)
                           if digest not in known)
    db.session.execute(delete(PasswordResetRequest).where(PasswordResetRequest.email == user.email))
    db.session.execute(delete(User).where(User.id == user.id).execution_options(synchronize_session=False))


def delete_customer(billable):
    """Cancel the customer's unended subscriptions and delete it at Stripe; return whether it had any subscription.

    For a user's account and an organisation alike (``billable``: ``models.billable``). Each unended
    subscription's open invoice is voided, then the subscription cancelled now on the terms of
    ``POST /subscription/cancel`` now (``prices.cancel_now_terms``): an ``active`` one with metered
    prices gets its final invoice, the usage of the period so far, before the customer goes. Usage
    accepted here (``202``) and not yet delivered is delivered first (``customer-deleting``, received by
    ``usage.delivery.deliver_for_deletion``: at most ``call_costs.USAGE_DELIVERED_ON_DELETION`` events, the
    caller having sent ``deletion-requested``), so that final invoice bills it (CONTRACT "Changes to the
    fifth round"); only events accepted meanwhile, or of a customer a retry finds deleted, are marked
    ``failed`` (``models.usage.abandon_pending``). Stripe calls: the customer, the meters and one per
    pending event, one page of subscriptions, two or three per unended one (the service keeps one), and
    the deletion; never the customer's history. Raises
    ``ProviderUnavailable`` (503) and ``ProviderRejected`` (502), after which the caller deletes nothing.
    """
    provider = get_provider()
    # A retry finds the customer deleted: the deletion got this far before the local one failed.
    deleted = provider.retrieve_customer(billable.provider_id).get("deleted")
    ever_subscribed = False
    if not deleted:
        customer_deleting.send(current_app._get_current_object(), provider=provider, customer=billable.provider_id)
        ever_subscribed = _cancel_and_delete(provider, billable)
    abandoned = abandon_pending(billable.provider_id)
    if abandoned:
        log.warning("usage: %s pending events of deleted customer %s not billed", abandoned, billable.provider_id)
        metrics.usage_events("failed", abandoned)
    return ever_subscribed


def _cancel_and_delete(provider, billable):
    unended = provider.list_unended_subscriptions(billable.provider_id)
    for subscription in unended:
        if subscription["status"] not in TERMINAL_STATUSES:
            # Voided first: a deleted customer's open invoice would still take a payment.
            provider.void_latest_invoice(subscription)
            prorate, invoice_now = prices.cancel_now_terms(subscription["status"], any(
                objects.is_metered(item) for item in objects.items_of(subscription)))
            # Credited only against the final invoice: without one the credit would stay on the balance
            # of a customer deleted a moment later.
            prorate = prorate and invoice_now
            # The terms are in the key: Stripe refuses a key reused with other parameters.
            key = f"delete-{billable.idempotency_token}-{subscription['id']}" + ("-invoice-now" if invoice_now else "")
            provider.cancel_subscription(subscription["id"], key, prorate=prorate, invoice_now=invoice_now)
    ever_subscribed = bool(unended) or provider.has_subscriptions(billable.provider_id)
    provider.delete_customer(billable.provider_id)
    return ever_subscribed
