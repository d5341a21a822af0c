"""When a token expires, and deleting the expired ones (SPEC 5 rules 4, 5 and 8; ``flask prune-tokens``).

One rule, in Python (``effective_expiry``) and in SQL (``expired_by``), shared by authentication,
the token list, the per-user cap and the prune: a token's own ``expires_at`` when set, else its
``created_at`` plus ``AUTH_TOKEN_EXPIRATION`` (never, without one). Applies to rotated-out tokens
too. Functions here never commit: the caller owns the transaction (the prune commits per batch
through its callback).
"""
from datetime import timedelta

from flask import current_app
from sqlalchemy import delete, func, or_, select

from app.extensions import db
from app.models import AccessToken, RotatedToken
from app.timeutil import utcnow

PRUNE_BATCH_SIZE = 10_000


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


def expired_by(model, moment):
    """Return a clause true for rows of ``model`` (a token table) expired at ``moment``.

    The same rule as ``effective_expiry``: ``expires_at`` when set, else ``created_at`` plus the
    global lifetime (never, without one).
    """
    expired = model.expires_at.is_not(None) & (model.expires_at <= moment)
    lifetime = global_lifetime()
    if lifetime is not None:
        expired = or_(expired, model.expires_at.is_(None) & (model.created_at <= moment - lifetime))
    return expired


def count_prunable(hours=1):
    """Return how many tokens ``prune(hours)`` would delete now (the length of a progress bar)."""
    cutoff = utcnow() - timedelta(hours=hours)
    return db.session.scalar(select(func.count(AccessToken.id)).where(expired_by(AccessToken, cutoff)))


def prune(hours=1, batch_size=PRUNE_BATCH_SIZE, on_batch=None):
    """Delete tokens expired more than ``hours`` hours ago; return how many were deleted.

    Rotated-out tokens are deleted by the same rule (a replay of one past its expiry is only an
    unknown token then) and are not counted. Deletes in batches of ``batch_size`` ids, so memory
    stays flat however many tokens there are. ``on_batch(count)`` is called after each batch's
    DELETE (``count`` is 0 for a batch of rotated-out tokens): the caller commits there (as
    ``flask prune-tokens`` does), since a prune over a million rows must not be one transaction
    holding its locks to the end, and may advance a progress bar.
    """
    cutoff = utcnow() - timedelta(hours=hours)
    rotated_batch = None if on_batch is None else (lambda count: on_batch(0))
    _prune_table(RotatedToken, cutoff, batch_size, rotated_batch)
    return _prune_table(AccessToken, cutoff, batch_size, on_batch)


def _prune_table(model, cutoff, batch_size, on_batch=None):
    expired = expired_by(model, cutoff)
    total, after = 0, 0
    while True:
        # Each batch starts at the id where the last one ended: starting over at the lowest id
        # would step over every row deleted so far (dead until vacuumed), so a prune of a million
        # tokens went quadratic. The batch is then deleted as an id range, with no id list to send.
        batch = (select(model.id).where(expired, model.id > after)
                 .order_by(model.id).limit(batch_size).subquery())
        upper = db.session.scalar(select(func.max(batch.c.id)))
        deleted = 0
        if upper is not None:
            deleted = db.session.execute(
                delete(model).where(expired, model.id > after, model.id <= upper)
                .execution_options(synchronize_session=False)
            ).rowcount
        total += deleted
        if on_batch is not None:
            on_batch(deleted)
        if deleted < batch_size:
            return total
        after = upper
