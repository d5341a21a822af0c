"""Email verification and password recovery and change (CONTRACT "Accounts"). Nothing here commits.

Tokens are never made here: these functions queue "send this email to user N" in the outbox
(``notify_account``), and the delivery worker mints the token as it sends (``app.email_tokens``).
"""
from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app import email_tokens
from app.auth import management, passwords
from app.auth.bearer import PROVIDER_CALLS_SCOPE
from app.auth.service import normalise_email
from app.billing import customers, redemptions
from app.billing.call_costs import OWNER_EMAIL_FOLLOWERS, PROVIDER_CALL_COSTS
from app.errors import (
    AlreadyVerified,
    EmailTaken,
    EmailUnverified,
    InvalidEmailToken,
    OrganizationsFollowEmail,
    WrongPassword,
)
from app.extensions import db, limiter
from app.models import Notification, PasswordResetRequest, User
from app.models.account import remember_address
from app.models.organization import customers_mailing_owner, ids_mailing_owner
from app.models.user import lock_user
from app.notifications import notify_account
from app.notifications.channels import configured_channel_names
from app.timeutil import utcnow


def check_password(user, password):
    """Raise ``WrongPassword`` (403 ``invalid_credentials``) unless ``password`` is ``user``'s."""
    if not passwords.verify_password(user.password_hash, password):
        raise WrongPassword()


def require_verified_email(user):
    """Raise ``EmailUnverified`` (403) if ``AUTH_REQUIRE_VERIFIED_EMAIL`` is on and ``user``'s address is unverified.

    ``user`` may be a snapshot: only ``email_verified_at`` is read. For every endpoint that starts
    paying (``/subscription/intent``, and Checkout).
    """
    if current_app.config["AUTH_REQUIRE_VERIFIED_EMAIL"] and user.email_verified_at is None:
        raise EmailUnverified()


def send_verification(user):
    """Queue a verification email to ``user``'s address; raise ``AlreadyVerified`` (409) when it is verified."""
    if user.email_verified_at is not None:
        raise AlreadyVerified()
    notify_account(user, "email_verification")


def verify_email(token):
    """Redeem a verification or email-change token; return the ``User``.

    A verification token sets ``email_verified_at`` (again: a no-op). An email-change token moves
    the address to the new one and marks it verified, and moves the Stripe customer's ``email``
    first, the user's own and that of each organisation they own without a ``billing_email``
    (``customers_mailing_owner``): ``ProviderUnavailable`` (503) there changes nothing here, and the
    link still works (a retry writes each address again). An email-change token is counted in its
    user's ``PROVIDER_CALLS_RATE_LIMIT`` (``RateLimited``, 429) before anything is read: the link has no
    bearer token, but it has a user. Raises ``InvalidEmailToken``
    (400) for a bad token, one for a deleted account, or one minted for an address the account no
    longer has (an address moved since, which also makes an email-change token work once), and an
    email-change token of any but the newest change request (CONTRACT "Changes to the fourth round");
    ``EmailTaken`` (409) when the new address was registered meanwhile; ``OrganizationsFollowEmail`` (409)
    as ``refuse_unbounded_email_move``.
    """
    purpose, payload = email_tokens.read_email_token(token)
    user = db.session.get(User, payload["u"])
    if user is None or user.email != payload.get("e"):
        raise InvalidEmailToken()
    if purpose == email_tokens.VERIFY:
        user.email_verified_at = user.email_verified_at or utcnow()
        return user
    limiter.hit(current_app.config["PROVIDER_CALLS_RATE_LIMIT"], PROVIDER_CALLS_SCOPE, str(user.id),
                PROVIDER_CALL_COSTS["auth.verify_email"])
    lock_user(user)
    if payload.get("r") is None or _latest_change_request(user) != payload["r"]:
        raise InvalidEmailToken()
    return _move_email(user, payload.get("n"))


def _latest_change_request(user):
    """The ``event_id`` of the user's newest email-change email: the one request whose link still works."""
    return db.session.scalar(select(Notification.event_id).where(
        Notification.user_id == user.id, Notification.kind == "email_change").order_by(Notification.id.desc()).limit(1))


def refuse_unbounded_email_move(user):
    """Raise ``OrganizationsFollowEmail`` (409) when more than ``OWNER_EMAIL_FOLLOWERS`` organisations ``user``
    owns have a Stripe customer mailing them (``ids_mailing_owner``): an email change moves each of those
    customers' email, one Stripe call each, and no request makes more than a constant number of calls
    (CONTRACT "Changes to the fifth round": "Bounded Stripe work"). Refused rather than left to a
    worker: each customer's email must follow only once Stripe answered, and the organisation stores no
    email of its own to lag behind its owner's. Calls nothing."""
    followers = ids_mailing_owner(user)
    if len(followers) > OWNER_EMAIL_FOLLOWERS:
        raise OrganizationsFollowEmail.over(followers, OWNER_EMAIL_FOLLOWERS)


def _move_email(user, new_email):
    """Move ``user`` to ``new_email``, Stripe first: one call for the user's own customer and one per
    organisation whose customer mails them (``customers_mailing_owner``), at most ``OWNER_EMAIL_FOLLOWERS``
    of them: more is refused before any call (``OrganizationsFollowEmail``, 409).
    """
    if not isinstance(new_email, str):
        raise InvalidEmailToken()
    if db.session.scalar(select(User.id).where(User.email == new_email)) is not None:
        raise EmailTaken()
    organizations = customers_mailing_owner(user)  # locked before Stripe hears of any of it
    if len(organizations) > OWNER_EMAIL_FOLLOWERS:
        raise OrganizationsFollowEmail.over([organization.id for organization in organizations], OWNER_EMAIL_FOLLOWERS)
    for billable in (user, *organizations):
        customers.follow(billable, email=new_email)
    remember_address(user)  # the address it leaves, for an account made before the history was kept
    user.email, user.email_verified_at = new_email, utcnow()
    try:
        db.session.flush()
        remember_address(user)
        redemptions.carry_redemptions(user)
    except IntegrityError:
        # Registered by someone else between the check and here: the failed UPDATE has aborted
        # the transaction on PostgreSQL, so rolling back is the only way on.
        db.session.rollback()
        raise EmailTaken() from None
    return user


def request_password_reset(email):
    """Record a reset request for ``email``, registered or not; the delivery worker sends the email.

    The same one INSERT whatever the address, and no lookup: a known and an unknown address cost
    the same (``app.notifications.outbox.expand_reset_requests`` looks the address up). Nothing is
    recorded without an email channel (``MAIL_SERVER``), as nothing could be sent.
    """
    if "email" in configured_channel_names(current_app.config):
        db.session.add(PasswordResetRequest(email=normalise_email(email)))


def reset_password(token, password):
    """Set ``password`` with a reset token; revoke every token of the user; return the ``User``.

    Raises ``InvalidEmailToken`` (400) unless the token was minted for the password hash the user
    has now: a used token, or one minted before any other password change, is dead. The user's
    row lock makes two concurrent resets with one token succeed once. A reset link reached the
    address, so it also marks the address verified.
    """
    payload = email_tokens.read_reset_token(token)
    user = db.session.get(User, payload["u"])
    if user is None:
        raise InvalidEmailToken()
    lock_user(user)
    db.session.refresh(user)
    if email_tokens.password_digest(user.password_hash) != payload.get("p") or user.email != payload.get("e"):
        raise InvalidEmailToken()
    user.email_verified_at = user.email_verified_at or utcnow()
    _set_password(user, password, "reset")
    management.logout_all(user, None)
    return user


def change_password(user, current_token, current_password, password):
    """Set ``password`` after checking ``current_password``; revoke every token but ``current_token``'s family.

    Raises ``WrongPassword`` (403 ``invalid_credentials``).
    """
    check_password(user, current_password)
    _set_password(user, password, "password")
    management.logout_all(user, current_token, except_current=True)
    return user


def _set_password(user, password, via):
    user.password_hash = passwords.hash_password(password)
    notify_account(user, "password_changed", {"via": via})
