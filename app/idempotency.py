"""The ``Idempotency-Key`` request header (IETF httpapi draft "The Idempotency-Key HTTP Header Field").

A POST that changes billing may be sent again by a client that lost the answer. With the same
key and the same request it gets the first answer back, marked ``Idempotent-Replayed: true``,
and nothing is done twice; the same key with another request (method, path or JSON body) is
``422 idempotency_key_reused``. Keys are the user's, kept 24 hours (as Stripe keeps its own).
Retries of one key that arrive together are serialised by the per-user lock, so the second one
waits for the first answer instead of doing the work again. The provider calls made for a keyed
request carry a key derived from it (``provider_key``), so that even a retry of a request whose
answer was never stored (a 5xx) makes no second change at Stripe.

A stored answer may carry a client secret (``pi_..._secret_...``, ``seti_..._secret_...``) or a
billing portal URL, each enough to pay with or manage the user's subscription: it is kept encrypted
(Fernet, AES-128-CBC with HMAC-SHA256, from ``cryptography``) under a key derived from
``SECRET_KEY``, so the table holds no secret in plain text (CONTRACT "Changes to the third round").
An answer that no longer decrypts (``SECRET_KEY`` rotated) is as good as expired.
"""
import base64
import hashlib
import json
import uuid
from datetime import timedelta
from functools import wraps

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from flask import current_app, g, make_response, request
from sqlalchemy import bindparam, delete, select, text

from app.auth.bearer import current_user_for_update
from app.error_handlers import handle_app_error
from app.errors import AppError
from app.extensions import db
from app.models import IdempotencyKey
from app.models.types import UTCDateTime
from app.models.user import lock_user
from app.timeutil import utcnow

HEADER = "Idempotency-Key"
LIFETIME = timedelta(hours=24)
MAX_KEY_LENGTH = 255
# Expired keys deleted along with each key stored: more than are stored, so the table cannot grow.
PRUNE_BATCH = 10

# The OpenAPI description of the header, for ``blp.doc(parameters=[PARAMETER])``.
PARAMETER = {
    "in": "header", "name": HEADER, "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": "^[\\x20-\\x7e]+$"},
    "description": "Makes a retry safe: the same key with the same body within 24 hours gets the first "
                   "answer (header Idempotent-Replayed: true) and changes nothing again; with another body "
                   "it is 422 idempotency_key_reused. A random value (a UUID) per intended action; printable "
                   "ASCII only, else 400 invalid_idempotency_key.",
}


class InvalidIdempotencyKey(AppError):
    status = 400
    code = "invalid_idempotency_key"
    message = "The Idempotency-Key header must be 1 to 255 printable ASCII characters (a UUID, say)."


class IdempotencyKeyReused(AppError):
    status = 422
    code = "idempotency_key_reused"
    message = ("This Idempotency-Key was already used with another request; send a new key for a new "
               "request.")


# Not the ORM's insert: a concurrent request with the same key (possible where a view commits
# midway, as the intent does) must not fail on the unique key; the loser replays the winner.
_INSERT = text(
    f"INSERT INTO {IdempotencyKey.__tablename__} (user_id, key, request_digest, status, body, created_at) "
    "VALUES (:user_id, :key, :request_digest, :status, :body, :created_at) "
    "ON CONFLICT (user_id, key) DO NOTHING RETURNING id"
).bindparams(bindparam("created_at", type_=UTCDateTime()))


def _key_of(raw):
    """The header's key: a Structured Fields string in the draft (quoted), bare as Stripe takes it."""
    if raw is None:
        return None
    key = raw.strip()
    if len(key) >= 2 and key[0] == key[-1] == '"':
        key = key[1:-1]
    # ASCII only: HTTP carries header bytes that WSGI hands over as latin-1, so any other script
    # arrives mangled ("ключ" is not the key the client sent) and a UTF-8 key cannot be told apart.
    if not key or len(key) > MAX_KEY_LENGTH or not key.isascii() or not key.isprintable():
        raise InvalidIdempotencyKey()
    return key


def request_digest():
    """Return the SHA-256 (hex) of the request's method, path and body (JSON compared by value)."""
    raw = request.get_data(cache=True)
    try:
        body = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":")).encode() if raw else b""
    except (ValueError, UnicodeDecodeError):
        body = raw
    return hashlib.sha256(f"{request.method} {request.path}\n".encode() + body).hexdigest()


def _cipher():
    """The app's Fernet, keyed by HKDF-SHA256 of ``SECRET_KEY`` for this one purpose."""
    cipher = current_app.extensions.get("idempotency_cipher")
    if cipher is None:
        secret = current_app.config.get("SECRET_KEY")
        if not secret:
            raise RuntimeError("SECRET_KEY is not set: stored Idempotency-Key answers are encrypted with it")
        secret = secret if isinstance(secret, bytes) else str(secret).encode()
        key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"idempotency-key answers").derive(secret)
        cipher = current_app.extensions["idempotency_cipher"] = Fernet(base64.urlsafe_b64encode(key))
    return cipher


def _stored(user, key):
    return db.session.scalars(select(IdempotencyKey).where(
        IdempotencyKey.user_id == user.id, IdempotencyKey.key == key,
        IdempotencyKey.created_at > utcnow() - LIFETIME)).first()


def _replay(stored, digest):
    if stored.request_digest != digest:
        raise IdempotencyKeyReused()
    response = current_app.response_class(_cipher().decrypt(stored.body.encode()), status=stored.status,
                                          mimetype="application/json")
    response.headers["Idempotent-Replayed"] = "true"
    return response


def _remember(user, key, digest, response):
    """Store ``response`` as the key's answer; return it, or the answer a concurrent retry stored first."""
    now = utcnow()
    # Expired keys go a few at a time with each new one, anyone's, so that no cron job is needed
    # and no request pays for a large backlog.
    expired = select(IdempotencyKey.id).where(IdempotencyKey.created_at <= now - LIFETIME).limit(PRUNE_BATCH)
    db.session.execute(delete(IdempotencyKey).where(IdempotencyKey.id.in_(expired.scalar_subquery())))
    inserted = db.session.execute(_INSERT, {
        "user_id": user.id, "key": key, "request_digest": digest, "status": response.status_code,
        "body": _cipher().encrypt(response.get_data()).decode(), "created_at": now}).first()
    if inserted is not None:
        return response
    return _replay(_stored(user, key), digest)


def idempotent(view):
    """Run a billing POST under its ``Idempotency-Key`` (see the module) and commit its work.

    Under ``auth_required``, above the view's argument parsing. The view's own work and the stored
    answer are committed together, here; an ``AppError`` below 500 is an answer like any other
    (stored, and what the view wrote from the provider's answers is kept). Raises
    ``InvalidIdempotencyKey`` (400) and ``IdempotencyKeyReused`` (422).
    """

    @wraps(view)
    def wrapper(*args, **kwargs):
        key = _key_of(request.headers.get(HEADER))
        digest = request_digest() if key is not None else None
        g.idempotency = (key, digest) if key is not None else None
        user = current_user_for_update()
        if key is not None:
            lock_user(user)
            stored = _stored(user, key)
            if stored is not None:
                try:
                    return _replay(stored, digest)
                except InvalidToken:
                    # Stored under another SECRET_KEY: done again, and Stripe's keys replay its calls.
                    db.session.delete(stored)
                    db.session.flush()
            # The key's own row past its 24 hours would refuse the new answer (the unique key).
            db.session.execute(delete(IdempotencyKey).where(
                IdempotencyKey.user_id == user.id, IdempotencyKey.key == key,
                IdempotencyKey.created_at <= utcnow() - LIFETIME))
        try:
            response = make_response(view(*args, **kwargs))
        except AppError as error:
            if error.status >= 500:
                raise
            response = handle_app_error(error)
        if key is not None:
            response = _remember(user, key, digest, response)
        db.session.commit()
        return response

    return wrapper


def provider_key(billable, action):
    """Return the Stripe idempotency key of ``action`` (e.g. ``"swap"``) on ``billable``'s customer in this request.

    Derived from the request's ``Idempotency-Key`` and its digest when it has one (so a retry
    replays Stripe's answer), else random (the SDK's own retries of this one call are still safe).
    With the digest in it, a client key reused for another request once its 24 hours are over is
    another key at Stripe too, which refuses a key reused with other parameters.
    """
    keyed = g.get("idempotency")
    if keyed is None:
        return f"{action}-{uuid.uuid4().hex}"
    key, digest = keyed
    derived = hashlib.sha256(f"{key} {digest}".encode()).hexdigest()[:40]
    return f"{action}-{billable.idempotency_token}-{derived}"
