"""Account endpoints on the ``auth`` blueprint (CONTRACT "Accounts: verification, recovery, profile, deletion").

Views parse, call one service function (``recovery`` or ``profile``), commit, answer. No view
sees a token of an email: the outbox holds "send this email to user N" and the worker mints it.
"""
from flask import current_app, g, request

from app import jsonbody, presentation
from app.auth import profile, recovery
from app.auth.bearer import ability_required, auth_required, current_user_for_update
from app.auth.schemas import (
    EmailChangeSchema,
    EmailTokenSchema,
    ForgotPasswordSchema,
    PasswordChangeSchema,
    PasswordConfirmSchema,
    ProfileSchema,
    ResetPasswordSchema,
    SentSchema,
)
from app.auth.views import blp
from app.billing_route import billing_route
from app.extensions import db, limiter
from app.presentation import UserSchema

SENT = {"sent": True}


def _password_guess_limit():
    return current_app.config["AUTH_LOGIN_RATE_LIMIT"]


def _user_key():
    # Per user: a stolen token must not become an unlimited oracle for the account's password.
    return f"user|{g.current_user.id}"


def _forgot_limit():
    return current_app.config["AUTH_PASSWORD_RESET_RATE_LIMIT"]


def _forgot_client_key():
    # The client address as the login limit reads it (ProxyFix sets it behind PROXY_FIX_X_FOR proxies).
    return f"client|{request.remote_addr or ''}"


def _forgot_address_key():
    # Per address, whoever asks: nobody can have more than the limit of reset emails sent to one inbox.
    return f"address|{str(jsonbody.email_of(request) or '').strip().lower()}"


@blp.route("/email/verification", methods=["POST"])
@auth_required
@ability_required("profile:write")
@blp.response(202, SentSchema)
@blp.alt_response(409, response="CONFLICT")
def send_verification():
    """Send a verification email to the caller's address again; 409 ``already_verified`` when it is verified."""
    recovery.send_verification(current_user_for_update())
    db.session.commit()
    return SENT


@blp.route("/email/verify", methods=["POST"])
@blp.arguments(EmailTokenSchema)
@blp.response(200, UserSchema)
@blp.alt_response(400, response="BAD_REQUEST")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def verify_email(body):
    """Redeem the token of a verification or email-change link; no bearer token needed.

    A verification token sets ``email_verified_at``. An email-change token moves the account (and
    the Stripe customer's ``email``, first: 503 ``provider_unavailable`` and nothing changes) to
    the new address, verified. 400 ``invalid_token`` for a malformed, tampered, expired or used
    token, or one for a deleted account; 409 ``email_taken`` when the new address was registered since,
    ``organizations_follow_email`` when more organisations' customers mail the user than one change moves
    (give the others a ``billing_email`` first). An email-change token counts in its user's
    ``PROVIDER_CALLS_RATE_LIMIT`` (429 past it).
    """
    user = recovery.verify_email(body["token"])
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/password/forgot", methods=["POST"])
@limiter.limit(_forgot_limit, key_func=_forgot_client_key)
@limiter.limit(_forgot_limit, key_func=_forgot_address_key)
@blp.arguments(ForgotPasswordSchema)
@blp.response(202, SentSchema)
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def forgot_password(body):
    """Email a password reset link to the address if it has an account; the answer is the same either way.

    Known and unknown addresses take the same time: the request only records itself, and the
    delivery worker looks the address up. ``AUTH_PASSWORD_RESET_RATE_LIMIT`` per address and per
    client: 429 ``rate_limited`` with ``Retry-After``.
    """
    recovery.request_password_reset(body["email"])
    db.session.commit()
    return SENT


@blp.route("/password/reset", methods=["POST"])
@blp.arguments(ResetPasswordSchema)
@blp.response(200, UserSchema)
@blp.alt_response(400, response="BAD_REQUEST")
def reset_password(body):
    """Set a new password with the token of a reset link; every token of the user is revoked.

    The token works once, and not after the password changed by any route: 400 ``invalid_token``.
    The password follows register's rules (422 ``validation_error``).
    """
    user = recovery.reset_password(body["token"], body["password"])
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/password", methods=["POST"])
@auth_required
@ability_required("profile:write")
@limiter.limit(_password_guess_limit, key_func=_user_key)
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
@blp.arguments(PasswordChangeSchema)
@blp.response(200, UserSchema)
def change_password(body):
    """Change the password; every other token of the caller is revoked, the one of this request stays.

    403 ``invalid_credentials`` for a wrong ``current_password``; 429 ``rate_limited`` past
    ``AUTH_LOGIN_RATE_LIMIT`` per user (this and the other endpoints that confirm a password).
    """
    user = recovery.change_password(current_user_for_update(), g.current_token, **body)
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/me", methods=["PATCH"])
@billing_route(blp, "profile:write", no_store=False)
@blp.arguments(ProfileSchema)
@blp.response(200, UserSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def update_profile(body):
    """Change the caller's ``name`` (null clears it), followed first by their Stripe customer's while it is still
    the profile's (503: nothing changes).

    Counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT`` (429 past it).
    """
    user = profile.update_profile(current_user_for_update(), body["name"])
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/email/change", methods=["POST"])
@auth_required
@ability_required("profile:write")
@limiter.limit(_password_guess_limit, key_func=_user_key)
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
@blp.arguments(EmailChangeSchema)
@blp.response(202, SentSchema)
@blp.alt_response(409, response="CONFLICT")
def change_email(body):
    """Send a link to the new address, and a notice without one to the current address.

    The address changes only when the link is opened (``POST /auth/email/verify``). 403
    ``invalid_credentials`` for a wrong ``password``; 409 ``email_taken`` for an address with an
    account, the caller's own included, ``organizations_follow_email`` when its link would be refused so.
    """
    profile.request_email_change(current_user_for_update(), **body)
    db.session.commit()
    return SENT


@blp.route("/me", methods=["DELETE"])
@billing_route(blp, "account:delete", no_store=False)
@limiter.limit(_password_guess_limit, key_func=_user_key)
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
@blp.arguments(PasswordConfirmSchema)
@blp.response(204)
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def delete_account(body):
    """Delete the caller's account: at Stripe first, then every row of theirs here.

    Every live subscription is cancelled at Stripe now and the customer deleted; then the user's
    tokens, notifications, deliveries, idempotency keys, subscription rows and the user go. 403
    ``invalid_credentials`` for a wrong ``password``; 503 ``provider_unavailable`` when Stripe
    fails, and nothing is deleted. 409 ``owns_organization`` while the caller owns an organisation with
    other members; one they are the only member of is deleted first, the others are left (a seat
    fewer each), Stripe first. The Stripe calls stay bounded whatever the caller belongs to (CONTRACT
    "Changes to the fifth round"), refused before any: 409 ``owns_organization`` for more than one
    organisation with a Stripe customer they are alone in (delete them first), ``member_of_organizations``
    for more than one other with billed seats (leave them first), ``usage_pending`` while accepted usage
    waits for delivery (the final invoice bills it); counted in ``PROVIDER_CALLS_RATE_LIMIT``.
    """
    profile.delete_account(current_user_for_update(), body["password"])
    db.session.commit()
