"""Profile, email change and account deletion (CONTRACT "Accounts"). Nothing here commits.

Email change and deletion are provider-first, as every billing write: Stripe is changed first,
and a Stripe failure (``ProviderUnavailable``, 503) leaves every local row as it was.
"""
from sqlalchemy import delete, exists, select

from app.auth.recovery import check_password
from app.auth.service import normalise_email
from app.billing.provider import get_provider
from app.billing.statuses import TERMINAL_STATUSES
from app.errors import EmailTaken
from app.extensions import db
from app.models import DeletedSubscriber, PasswordResetRequest, Subscription, User
from app.models.account import address_hashes
from app.models.user import lock_user
from app.notifications import notify_account


def was_deleted_subscriber(user):
    """Return whether a deleted account that ever subscribed had any address ``user`` has had (no second trial)."""
    return db.session.scalar(select(exists().where(DeletedSubscriber.email_sha256.in_(address_hashes(user)))))


def update_profile(user, name):
    """Set ``user``'s ``name`` (``None`` clears it); return the user."""
    user.name = name
    return user


def request_email_change(user, email, password):
    """Queue the move of ``user`` to ``email``: a link to the new address, a notice to the current one.

    The address changes only when the link is opened (``recovery.verify_email``). Raises
    ``WrongPassword`` (403), ``EmailTaken`` (409) for an address registered to anyone, the user included.
    """
    check_password(user, password)
    email = normalise_email(email)
    if email == user.email:
        raise EmailTaken.yours()
    if db.session.scalar(select(User.id).where(User.email == email)) is not None:
        raise EmailTaken()
    notify_account(user, "email_change", {"email": email})
    notify_account(user, "email_change_requested", {"new_email": email})


def delete_account(user, password):
    """Delete ``user`` and everything of theirs, Stripe first; raise ``WrongPassword`` (403).

    At Stripe every subscription not yet ended is cancelled now (no proration, no invoice) and the
    customer deleted; ``ProviderUnavailable`` (503) there deletes nothing here (a retry finds what
    was done: a cancelled subscription is skipped, a deleted customer counts as deleted). Then one
    DELETE of the user: the foreign keys cascade to tokens, rotated tokens, notifications and
    their deliveries, idempotency keys, subscriptions and their items. If the account ever
    subscribed (a subscription here or at Stripe), the SHA-256 of every address it had is kept so that the
    address registered again gets no free trial.
    """
    check_password(user, password)
    lock_user(user)
    ever_subscribed = db.session.scalar(select(exists().where(Subscription.user_id == user.id)))
    if user.provider_id:
        ever_subscribed = _delete_customer(user) or ever_subscribed
    if ever_subscribed:
        # Every address the account had: the one it left by an email change gets no second trial either.
        known = set(db.session.scalars(select(DeletedSubscriber.email_sha256).where(
            DeletedSubscriber.email_sha256.in_(address_hashes(user)))))
        db.session.add_all(DeletedSubscriber(email_sha256=digest) for digest in address_hashes(user)
                           if digest not in known)
    db.session.execute(delete(PasswordResetRequest).where(PasswordResetRequest.email == user.email))
    db.session.execute(delete(User).where(User.id == user.id).execution_options(synchronize_session=False))


def _delete_customer(user):
    """Cancel the customer's unended subscriptions and delete it at Stripe; return whether it had any subscription."""
    provider = get_provider()
    if provider.retrieve_customer(user.provider_id).get("deleted"):
        return False  # a retry: the deletion got this far before the local one failed
    unended = provider.list_unended_subscriptions(user.provider_id)
    for subscription in unended:
        if subscription["status"] not in TERMINAL_STATUSES:
            # Voided first: a deleted customer's open invoice would still take a payment.
            provider.void_latest_invoice(subscription)
            provider.cancel_subscription(subscription["id"], f"delete-{user.idempotency_token}-{subscription['id']}")
    ever_subscribed = bool(unended) or provider.has_subscriptions(user.provider_id)
    provider.delete_customer(user.provider_id)
    return ever_subscribed
