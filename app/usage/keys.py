"""Service keys: the credential of the client app's own servers, for usage reports (CONTRACT "Usage-based billing").

A credential kind of its own, never a user's token: a user could lower their own bill. Its plain
text is ``<id>|svc_<secret>`` (the secret 43 URL-safe characters, 256 bits from ``secrets``), shown
once by ``flask create-service-key``; only the SHA-256 hex digest is stored, looked up by id and
compared in constant time, as access tokens are (``app.auth.tokens``). The ``svc_`` prefix tells a
service key from a user's token, so that a user's valid token on a service endpoint is answered
``403 insufficient_scope`` rather than ``401``. Functions here never commit.
"""
import hashlib
import hmac
import secrets
from datetime import timedelta
from functools import wraps

from flask import g, request
from sqlalchemy import bindparam, select, update

from app.api import Blueprint
from app.auth import tokens
from app.errors import InsufficientScope, NotFound, TokenReused, Unauthenticated
from app.extensions import db
from app.models import ServiceKey
from app.timeutil import utcnow

PREFIX = "svc_"
# What a service key may do.
SERVICE_ABILITIES = {"usage:write": "POST /usage/events",
                     "entitlements:check": "POST /entitlements/check, /entitlements/reservations (settle, DELETE)"}
LAST_USED_RESOLUTION = timedelta(minutes=1)
SERVICE_SECURITY = [{"serviceKey": []}]
# Read on every service-key request (a consume, a usage report): one Core statement built once, the
# columns the check reads, rather than an ORM object (a millisecond of a consume's CPU).
_KEYS = ServiceKey.__table__
_LOOKUP = select(_KEYS.c.id, _KEYS.c.token, _KEYS.c.abilities, _KEYS.c.revoked_at, _KEYS.c.last_used_at).where(
    _KEYS.c.id == bindparam("key_id"))


def digest(secret):
    """The SHA-256 hex digest of ``secret``, as a key's ``token`` keeps it."""
    return hashlib.sha256(secret.encode()).hexdigest()


def create(name, abilities=("usage:write",)):
    """Create a key; return ``(key, plain_text)``. Raises ``ValueError`` for an unknown ability or empty name."""
    unknown = sorted(set(abilities) - set(SERVICE_ABILITIES))
    if unknown:
        raise ValueError(f"unknown ability {unknown[0]!r}; service keys may have: {', '.join(SERVICE_ABILITIES)}")
    if not name.strip():
        raise ValueError("the name must not be empty")
    secret = PREFIX + secrets.token_urlsafe(32)
    key = ServiceKey(name=name.strip()[:255], token=digest(secret), abilities=list(abilities), created_at=utcnow())
    db.session.add(key)
    db.session.flush()
    return key, f"{key.id}|{secret}"


def listed():
    """Every key, oldest first."""
    return db.session.scalars(select(ServiceKey).order_by(ServiceKey.id)).all()


def revoke(key_id):
    """Revoke key ``key_id``; return it. Raises ``NotFound``; revoking twice keeps the first time."""
    key = db.session.get(ServiceKey, key_id)
    if key is None:
        raise NotFound(f"no service key {key_id}")
    key.revoked_at = key.revoked_at or utcnow()
    return key


def is_service_key(plain_text):
    return plain_text.partition("|")[2].startswith(PREFIX)


def split(plain_text):
    """``(key id, secret)`` of a service key's plain text ``<id>|<secret>``, or ``None`` when the id is malformed."""
    key_id, _, secret = plain_text.partition("|")
    if not (key_id.isascii() and key_id.isdigit() and len(key_id) <= 18):
        return None
    return int(key_id), secret


def authenticate(plain_text):
    """Return the live key ``plain_text`` names (a row: ``id``, ``token``, ``abilities``, ``revoked_at``,
    ``last_used_at``); raise ``Unauthenticated`` for anything else."""
    parts = split(plain_text)
    if parts is None:
        raise Unauthenticated.invalid_token("malformed service key")
    key_id, secret = parts
    key = db.session.connection().execute(_LOOKUP, {"key_id": key_id}).first()
    if key is None or key.revoked_at is not None or not hmac.compare_digest(key.token, digest(secret)):
        raise Unauthenticated.invalid_token("unknown or revoked service key")
    return key


def _touch(key):
    """Record the key's use at a resolution of ``LAST_USED_RESOLUTION``; return its ``last_used_at`` now."""
    now = utcnow()
    if key.last_used_at is None or now - key.last_used_at >= LAST_USED_RESOLUTION:
        db.session.execute(update(ServiceKey).where(ServiceKey.id == key.id).values(last_used_at=now))
        return now
    return key.last_used_at


def _credential():
    scheme, _, credential = request.headers.get("Authorization", "").strip().partition(" ")
    if not scheme:
        raise Unauthenticated.missing_token()
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthenticated.invalid_token("expected 'Authorization: Bearer <service key>'")
    return credential.strip()


def _user_token(credential):
    """Authenticate a user's token as ``auth_required`` does (a replayed rotated-out one revokes its family)."""
    try:
        tokens.authenticate(credential)
    except TokenReused:
        db.session.commit()  # the family's revocation stands although this request fails
        raise


def service_key_required(ability):
    """Require a live service key with ``ability``; ``g.service_key`` (``authenticate``'s row) and
    ``g.service_key_used_at`` (its ``last_used_at`` after this use) are set for the view.

    A user's valid token is ``403 insufficient_scope`` (it can never have a service ability); an
    unknown, malformed or revoked credential is ``401``.
    """
    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            credential = _credential()
            if not is_service_key(credential):
                _user_token(credential)  # 401 unless it is a valid token...
                raise InsufficientScope.for_ability(ability)  # ...which may never report usage
            key = authenticate(credential)
            if ability not in key.abilities:
                raise InsufficientScope.for_ability(ability)
            g.service_key, g.service_key_used_at = key, _touch(key)
            return view(*args, **kwargs)

        return Blueprint.doc(security=SERVICE_SECURITY, **{"x-abilities": [ability]},
                             responses={"401": "UNAUTHORIZED", "403": "FORBIDDEN"})(wrapper)

    return decorator
