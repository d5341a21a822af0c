"""Signed email tokens (CONTRACT "Accounts"): minted when an email is sent, read when its link comes back.

``itsdangerous.URLSafeTimedSerializer`` keyed by ``SECRET_KEY``, one salt per purpose, so a token of
one purpose is no token of another. Nothing here stores a token: the delivery worker mints it into
the email it sends, and the redeeming endpoint checks its signature, age and payload. A reset
token carries a digest of the password hash it was minted for: the first reset (or any other
password change) changes the hash, and the token is dead.

A top-level module rather than part of ``app.auth``: the delivery worker's message builder
(``app.notifications.messages``) mints, and ``app.auth`` imports the notifications.
"""
import hashlib

from flask import current_app
from itsdangerous import BadData, URLSafeTimedSerializer

from app.errors import InvalidEmailToken, ServiceUnavailable

VERIFY, CHANGE, RESET = "email-verify", "email-change", "password-reset"
# The longest token a link can carry here is well under this; a longer one is not ours.
MAX_LENGTH = 1024


def _serializer(salt):
    key = current_app.config["SECRET_KEY"]
    if not key:
        raise ServiceUnavailable.not_configured("SECRET_KEY")
    return URLSafeTimedSerializer(key, salt=salt)


def password_digest(password_hash):
    """Return the 32-hex-character SHA-256 prefix of ``password_hash`` that a reset token is bound to."""
    return hashlib.sha256(password_hash.encode()).hexdigest()[:32]


def mint_verification(user):
    """Return a token proving ``user.email`` (``{"u": id, "e": email}``), good for ``AUTH_VERIFY_EMAIL_TTL`` minutes."""
    return _serializer(VERIFY).dumps({"u": user.id, "e": user.email})


def mint_email_change(user, new_email, request_id):
    """Return a token moving ``user`` from its current address to ``new_email`` once redeemed.

    ``request_id`` is the ``event_id`` of the change request's email (``"r"``): only the newest
    request's token is redeemable, so a later request, or a redeemed one, kills every earlier link.
    """
    return _serializer(CHANGE).dumps({"u": user.id, "e": user.email, "n": new_email, "r": request_id})


def mint_reset(user):
    """Return a password reset token bound to ``user``'s current password hash and address (``"e"``):
    mailed to one address, it is dead once the account has moved to another."""
    return _serializer(RESET).dumps({"u": user.id, "p": password_digest(user.password_hash), "e": user.email})


def _load(token, salt, minutes):
    """Return the payload dict of ``token`` signed with ``salt`` at most ``minutes`` ago; raise ``BadData``."""
    payload = _serializer(salt).loads(token, max_age=minutes * 60)
    if not isinstance(payload, dict) or not isinstance(payload.get("u"), int):
        raise BadData("not a payload of ours")
    return payload


def read_email_token(token):
    """Return ``(purpose, payload)`` of a verification (``VERIFY``) or email-change (``CHANGE``) token.

    Raises ``InvalidEmailToken`` (400) for anything else: malformed, tampered, another purpose's,
    or older than ``AUTH_VERIFY_EMAIL_TTL`` minutes.
    """
    minutes = current_app.config["AUTH_VERIFY_EMAIL_TTL"]
    for salt in (VERIFY, CHANGE):
        try:
            return salt, _load(token, salt, minutes)
        except BadData:
            continue
    raise InvalidEmailToken()


def read_reset_token(token):
    """Return the payload ``{"u", "p", "e"}`` of a reset token younger than ``AUTH_PASSWORD_RESET_TTL`` minutes.

    Raises ``InvalidEmailToken`` (400) otherwise. Whether ``p`` and ``e`` still match is the caller's check.
    """
    try:
        return _load(token, RESET, current_app.config["AUTH_PASSWORD_RESET_TTL"])
    except BadData:
        raise InvalidEmailToken() from None


def link(notification, user):
    """Return the link the account email ``notification`` carries, with a token minted now.

    ``email_verification`` and ``email_change`` (``data["email"]``: the new address) link to
    ``APP_URL_VERIFY_EMAIL``, ``password_reset`` to ``APP_URL_RESET_PASSWORD``, ``{token}`` replaced.
    """
    config = current_app.config
    kind = notification.kind
    if kind == "password_reset":
        return config["APP_URL_RESET_PASSWORD"].replace("{token}", mint_reset(user))
    token = mint_email_change(user, notification.data["email"], notification.event_id) if kind == "email_change" \
        else mint_verification(user)
    return config["APP_URL_VERIFY_EMAIL"].replace("{token}", token)
