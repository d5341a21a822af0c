"""Personal access tokens: issue, verify, rotate, revoke and prune (SPEC 2, 3 and 5; CONTRACT "Token").

A token's plain text is ``<id>|<AUTH_TOKEN_PREFIX><secret>``; the secret is 43 URL-safe characters
(256 bits from ``secrets``) and only the SHA-256 hex digest of ``<prefix><secret>`` is stored.
Functions here never commit: the caller owns the transaction.
"""
import hashlib
import hmac
import secrets
from datetime import timedelta

from flask import current_app
from sqlalchemy import bindparam, delete, func, or_, select, update
from sqlalchemy.orm import joinedload

from app.errors import Unauthenticated
from app.extensions import db
from app.models import AccessToken, User
from app.timeutil import utcnow

TOKEN_NAME = "auth"
REMEMBER_ME_LIFETIME = timedelta(days=30)
SESSION_LIFETIME = timedelta(hours=2)
# Writing last_used_at on every request serialises a busy client's requests on one row.
LAST_USED_RESOLUTION = timedelta(minutes=1)
PRUNE_BATCH_SIZE = 10_000
# The token with its user and the user's subscriptions, in one query: most authenticated views read
# them (the entitled plan), and a lazy load would cost a round trip each. Built once, not per
# request: rebuilding the statement and its loader options was a third of /auth/me's time.
_TOKEN_WITH_USER = (
    select(AccessToken)
    .where(AccessToken.id == bindparam("token_id"))
    .options(joinedload(AccessToken.user, innerjoin=True).joinedload(User.subscriptions))
)


def _digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def global_lifetime():
    """Return ``AUTH_TOKEN_EXPIRATION`` as a ``timedelta``, or ``None`` when tokens do not expire."""
    minutes = current_app.config["AUTH_TOKEN_EXPIRATION"]
    return None if minutes is None else timedelta(minutes=minutes)


def effective_expiry(token):
    """Return when ``token`` expires (UTC): its own ``expires_at``, else created + global lifetime."""
    if token.expires_at is not None:
        return token.expires_at
    lifetime = global_lifetime()
    return None if lifetime is None else token.created_at + lifetime


def issue(user, lifetime=None):
    """Create a token named ``auth`` with no abilities for ``user``; return ``(token, plain_text)``.

    ``lifetime`` (a ``timedelta``) sets an explicit ``expires_at``; ``None`` leaves the global
    expiration in charge.
    """
    now = utcnow()
    secret = current_app.config["AUTH_TOKEN_PREFIX"] + secrets.token_urlsafe(32)
    token = AccessToken(
        user=user,
        name=TOKEN_NAME,
        token=_digest(secret),
        abilities=[],
        created_at=now,
        expires_at=None if lifetime is None else now + lifetime,
    )
    db.session.add(token)
    db.session.flush()
    return token, f"{token.id}|{secret}"


def authenticate(plain_text):
    """Return the valid ``AccessToken`` (with its user loaded) for a bearer credential.

    Raises ``Unauthenticated`` when the credential is malformed, unknown, does not match, or has
    expired (SPEC 5 rule 4: expiry is checked on every authenticated request).
    """
    token_id, _, secret = (plain_text or "").partition("|")
    # ASCII digits that fit a 64-bit key: anything else cannot name a token (and would overflow it).
    if not (token_id.isascii() and token_id.isdigit() and len(token_id) <= 18) or not secret:
        raise Unauthenticated.invalid_token("malformed token")
    token = db.session.execute(_TOKEN_WITH_USER, {"token_id": int(token_id)}).unique().scalar_one_or_none()
    if token is None or not hmac.compare_digest(token.token, _digest(secret)):
        raise Unauthenticated.invalid_token("unknown or revoked token")
    expiry = effective_expiry(token)
    if expiry is not None and expiry <= utcnow():
        raise Unauthenticated.invalid_token("token expired")
    return token


def touch(token):
    """Record use of ``token``, at most once per ``LAST_USED_RESOLUTION``; return whether it wrote."""
    now = utcnow()
    if token.last_used_at is not None and now - token.last_used_at < LAST_USED_RESOLUTION:
        return False
    result = db.session.execute(
        update(AccessToken)
        .where(AccessToken.id == token.id)
        .where(or_(AccessToken.last_used_at.is_(None), AccessToken.last_used_at <= now - LAST_USED_RESOLUTION))
        .values(last_used_at=now)
        .execution_options(synchronize_session=False)
    )
    return result.rowcount > 0


def login_lifetime(remember_me):
    """Return the explicit lifetime for a login (SPEC 4 rule 1), ``None`` without remember-me support."""
    if not current_app.config["AUTH_REMEMBER_ME"]:
        return None
    return REMEMBER_ME_LIFETIME if remember_me else SESSION_LIFETIME


def rotate(token):
    """Delete ``token`` and issue its successor; return ``(token, plain_text)`` (SPEC 5 rule 6).

    With ``AUTH_REMEMBER_ME`` on, the successor keeps the old token's lifetime (SPEC 4 rule 2);
    otherwise it gets the default configured expiration.
    """
    lifetime = None
    if current_app.config["AUTH_REMEMBER_ME"] and token.expires_at is not None:
        lifetime = token.expires_at - token.created_at
    user = token.user
    revoke(token)
    return issue(user, lifetime)


def revoke(token):
    """Delete ``token`` (logout, SPEC 5 rule 6)."""
    db.session.delete(token)
    db.session.flush()


def _prunable(hours):
    cutoff = utcnow() - timedelta(hours=hours)
    expired = AccessToken.expires_at <= cutoff
    lifetime = global_lifetime()
    if lifetime is not None:
        expired = or_(expired, AccessToken.expires_at.is_(None) & (AccessToken.created_at <= cutoff - lifetime))
    return expired


def count_prunable(hours=1):
    """Return how many tokens ``prune(hours)`` would delete now (the length of a progress bar)."""
    return db.session.scalar(select(func.count(AccessToken.id)).where(_prunable(hours)))


def prune(hours=1, batch_size=PRUNE_BATCH_SIZE, on_batch=None):
    """Delete tokens expired more than ``hours`` hours ago; return how many were deleted.

    Deletes in batches of ``batch_size`` ids, so memory stays flat however many tokens there are.
    ``on_batch(count)`` is called after each batch's DELETE: the caller commits there (as
    ``flask prune-tokens`` does), since a prune over a million rows must not be one transaction
    holding its row locks and undo to the end, and may advance a progress bar.
    """
    expired = _prunable(hours)
    total, after = 0, 0
    while True:
        # Each batch starts at the id where the last one ended: starting over at the lowest id
        # would step over every row deleted so far (dead until vacuumed), so a prune of a million
        # tokens went quadratic. The batch is then deleted as an id range, with no id list to send.
        batch = (select(AccessToken.id).where(expired, AccessToken.id > after)
                 .order_by(AccessToken.id).limit(batch_size).subquery())
        upper = db.session.scalar(select(func.max(batch.c.id)))
        deleted = 0
        if upper is not None:
            deleted = db.session.execute(
                delete(AccessToken).where(expired, AccessToken.id > after, AccessToken.id <= upper)
                .execution_options(synchronize_session=False)
            ).rowcount
        total += deleted
        if on_batch is not None:
            on_batch(deleted)
        if deleted < batch_size:
            return total
        after = upper
