"""Personal access tokens: issue, verify, rotate and revoke (SPEC 2, 3 and 5; CONTRACT "Token").

The one place a bearer credential is checked (``authenticate``), and refresh rotation with its
families and reuse detection (issue 12). When a token expires, and pruning the expired ones, is
``app.auth.expiry``.

A token's plain text is ``<id>|<AUTH_TOKEN_PREFIX><secret>``; the secret is 43 URL-safe characters
(256 bits from ``secrets``) and only the SHA-256 hex digest of ``<prefix><secret>`` is stored.
Functions here never commit: the caller owns the transaction.
"""
import hashlib
import hmac
import logging
import secrets
from datetime import timedelta

from flask import current_app
from sqlalchemy import bindparam, delete, exists, or_, select, update

from app.auth.expiry import effective_expiry
from app.db_session import autocommit_engine
from app.errors import TokenReused, Unauthenticated
from app.extensions import db
from app.models import AccessToken, Membership, RotatedToken, Subscription, User
from app.models.snapshots import SubscriptionSnapshot, TokenSnapshot, UserSnapshot, split_columns
from app.timeutil import utcnow

log = logging.getLogger(__name__)

TOKEN_NAME = "auth"
REMEMBER_ME_LIFETIME = timedelta(days=30)
SESSION_LIFETIME = timedelta(hours=2)
# Writing last_used_at on every request serialises a busy client's requests on one row.
LAST_USED_RESOLUTION = timedelta(minutes=1)
# The bearer path's one statement (issue 13): the token, its user and the user's subscriptions (what
# the entitled plan needs), one row per subscription, read as Core rows into snapshots, only the
# columns those hold. Loading them as ORM objects was half of /auth/me's CPU. Built once, not per
# request, from table columns only: one ORM attribute in it would route it through the ORM again.
_TOKENS, _USERS, _SUBSCRIPTIONS = AccessToken.__table__, User.__table__, Subscription.__table__
_LOOKUP_COLUMNS, _LOOKUP_PARTS = split_columns(
    [(_TOKENS, TokenSnapshot), (_USERS, UserSnapshot), (_SUBSCRIPTIONS, SubscriptionSnapshot)])
# Whether the user belongs to an organisation: /auth/me lists them only then, so a user in none
# (most) pays no second statement for an empty list (it was 29% of /auth/me's CPU on PostgreSQL).
_HAS_ORGANIZATIONS = exists().where(Membership.__table__.c.user_id == _USERS.c.id).label("has_organizations")
_LOOKUP = (
    select(*_LOOKUP_COLUMNS, _HAS_ORGANIZATIONS)
    .select_from(_TOKENS.join(_USERS).outerjoin(_SUBSCRIPTIONS))
    .where(_TOKENS.c.id == bindparam("token_id"))
    .order_by(_SUBSCRIPTIONS.c.id)
)


def _digest(secret):
    return hashlib.sha256(secret.encode()).hexdigest()


def family_of(token):
    """Return the id of the refresh family of ``token``: the id of the token its chain started from."""
    return token.family_id or token.id


def issue(user, lifetime=None, *, name=TOKEN_NAME, abilities=(), family_id=None, client=None):
    """Create a token for ``user``; return ``(token, plain_text)``.

    Defaults give the login token of SPEC 2: name ``auth``, no abilities (meaning all). ``lifetime``
    (a ``timedelta``) sets an explicit ``expires_at``; ``None`` leaves the global expiration in
    charge. ``family_id`` puts the token in a refresh family (``None`` starts one); ``client`` is
    ``{"user_agent", "ip"}`` of the request that asked for it.
    """
    now = utcnow()
    secret = current_app.config["AUTH_TOKEN_PREFIX"] + secrets.token_urlsafe(32)
    token = AccessToken(
        user_id=user.id,
        name=name,
        token=_digest(secret),
        abilities=list(abilities),
        family_id=family_id,
        created_at=now,
        expires_at=None if lifetime is None else now + lifetime,
        **(client or {}),
    )
    db.session.add(token)
    db.session.flush()
    return token, f"{token.id}|{secret}"


def _parse(plain_text):
    token_id, _, secret = (plain_text or "").partition("|")
    # ASCII digits that fit a 64-bit key: anything else cannot name a token (and would overflow it).
    if not (token_id.isascii() and token_id.isdigit() and len(token_id) <= 18) or not secret:
        raise Unauthenticated.invalid_token("malformed token")
    return int(token_id), _digest(secret)


def _lookup(token_id):
    """Return a ``TokenSnapshot`` of token ``token_id`` with ``user`` (a ``UserSnapshot``), or ``None``."""
    # A connection of its own, not the session's: on a read the session is then never started, which
    # spares its bookkeeping and its teardown (a fifth of /auth/me's CPU). One SELECT needs no
    # transaction, so no BEGIN and ROLLBACK round trips either, whatever the request's method.
    with autocommit_engine().connect() as connection:
        rows = connection.execute(_LOOKUP, {"token_id": token_id}).all()
    if not rows:
        return None
    (token_start, token_stop, token_keys), (user_start, user_stop, user_keys), (sub_start, sub_stop, sub_keys) = (
        _LOOKUP_PARTS)
    first = rows[0]
    # Without a subscription the outer join gives one row whose subscription columns are all NULL.
    sub_id = sub_start + sub_keys.index("id")
    subscriptions = [SubscriptionSnapshot(**dict(zip(sub_keys, row[sub_start:sub_stop], strict=True)))
                     for row in rows if row[sub_id] is not None]
    user = UserSnapshot(**dict(zip(user_keys, first[user_start:user_stop], strict=True)), subscriptions=subscriptions,
                        has_organizations=first.has_organizations)
    return TokenSnapshot(**dict(zip(token_keys, first[token_start:token_stop], strict=True)), user=user)


def authenticate(plain_text):
    """Return a read-only snapshot of the valid token, with ``user`` and its ``subscriptions``.

    The snapshots (``app.models.snapshots``) carry the models' column names; a view that changes
    the token or the user loads its ORM object.

    Raises ``Unauthenticated`` when the credential is malformed, unknown, does not match, or has
    expired (SPEC 5 rule 4: expiry is checked on every authenticated request), and for a token
    refresh rotated out (see ``_refuse_rotated``: ``TokenReused`` after the grace window).
    """
    token_id, digest = _parse(plain_text)
    token = _lookup(token_id)
    if token is None:
        _refuse_rotated(token_id, digest)
    if token is None or not hmac.compare_digest(token.token, digest):
        raise Unauthenticated.invalid_token("unknown or revoked token")
    expiry = effective_expiry(token)
    if expiry is not None and expiry <= utcnow():
        raise Unauthenticated.invalid_token("token expired")
    return token


def _refuse_rotated(token_id, digest):
    """Raise for a token that refresh rotated out; return for any other unknown id.

    Within ``AUTH_REFRESH_GRACE_SECONDS`` of its rotation it is a client's concurrent or repeated
    refresh (two tabs): 401, nothing else. Later it is a replay, by a thief or by the client the
    thief beat to the refresh: the whole family is revoked and ``TokenReused`` raised (the caller
    commits the revocation). The digest must match first, or any id would revoke a family.
    """
    rotated = db.session.get(RotatedToken, token_id)
    if rotated is None or not hmac.compare_digest(rotated.token, digest):
        return
    grace = timedelta(seconds=current_app.config["AUTH_REFRESH_GRACE_SECONDS"])
    if utcnow() - rotated.rotated_at < grace:
        raise Unauthenticated.invalid_token("token rotated out")
    revoked = revoke_family(rotated.family_id)
    log.warning("refresh token reuse detected: token %s of user %s presented again; family %s revoked "
                "(%s live token(s))", token_id, rotated.user_id, rotated.family_id, revoked)
    raise TokenReused.detected()


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


def _delete(*where):
    return db.session.execute(
        delete(AccessToken).where(*where).execution_options(synchronize_session=False)).rowcount


def rotate(token, client=None):
    """Delete ``token`` and issue its successor; return ``(token, plain_text)`` (SPEC 5 rule 6).

    The successor keeps the name, the abilities and the family, so a refresh never widens a
    token. A token with an explicit ``expires_at`` hands its lifetime on (SPEC 4 rule 2: the
    remember-me lifetimes, and a personal token's ``expires_in_days``); otherwise the successor
    gets the default configured expiration. The old token is kept as a ``RotatedToken`` for reuse
    detection. Raises ``Unauthenticated`` when the DELETE matched no row: a concurrent refresh of
    the same token won (its row lock, or SQLite's write lock, orders the two), and only one may.
    """
    if _delete(AccessToken.id == token.id) != 1:
        raise Unauthenticated.invalid_token("token rotated out")
    family_id = family_of(token)
    db.session.add(RotatedToken(id=token.id, user_id=token.user_id, family_id=family_id, token=token.token,
                                expires_at=token.expires_at, created_at=token.created_at, rotated_at=utcnow()))
    lifetime = None if token.expires_at is None else token.expires_at - token.created_at
    return issue(token.user, lifetime, name=token.name, abilities=token.abilities, family_id=family_id,
                 client=client)


def revoke(token):
    """Delete ``token`` (logout, SPEC 5 rule 6), and what its family left rotated out (nothing is left to protect).

    Only the token itself is live in its family: every refresh replaces the one live member.
    """
    _delete(AccessToken.id == token.id)
    _delete_rotated(RotatedToken.family_id == family_of(token))


def revoke_family(family_id):
    """Delete every token of the refresh family ``family_id`` and its rotated-out tokens; return how many were live."""
    revoked = _delete(or_(AccessToken.id == family_id, AccessToken.family_id == family_id))
    _delete_rotated(RotatedToken.family_id == family_id)
    return revoked


def _delete_rotated(*where):
    db.session.execute(delete(RotatedToken).where(*where).execution_options(synchronize_session=False))
