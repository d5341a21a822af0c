"""Self-service management of a user's tokens: list, create personal tokens, revoke, log out everywhere.

Issue 12; CONTRACT "Additions (second round)". Nothing here commits: the view owns the transaction.
"""
from datetime import timedelta

from flask import current_app
from sqlalchemy import delete, func, not_, select

from app.auth import expiry, tokens
from app.auth.abilities import grants
from app.errors import InsufficientScope, NotFound, TooManyTokens
from app.extensions import db
from app.models import AccessToken, RotatedToken
from app.models.user import lock_user
from app.pagination import newest_first
from app.timeutil import utcnow


def _live(user):
    return AccessToken.user_id == user.id, not_(expiry.expired_by(AccessToken, utcnow()))


def list_tokens(user, limit=20, starting_after=None):
    """Return ``(tokens, has_more)``: the user's live (unexpired) tokens, newest first, ``limit`` per page."""
    return newest_first(select(AccessToken).where(*_live(user)), AccessToken.id, limit, starting_after)


def present_token(token, current):
    """Return the CONTRACT "Token info" of ``token`` as a dict; ``current`` is the request's token."""
    return {
        "id": token.id, "name": token.name, "abilities": token.abilities, "created_at": token.created_at,
        "last_used_at": token.last_used_at, "expires_at": expiry.effective_expiry(token),
        "current": token.id == current.id, "user_agent": token.user_agent, "ip": token.ip,
    }


def create_token(user, name, abilities, expires_in_days=None, client=None, granted=()):
    """Issue a personal access token; return ``(token, plain_text)``.

    ``abilities`` is a non-empty list from ``ABILITIES`` (validated by the schema), each one the
    calling token's ``granted`` abilities allow (``[]``, a login token's, allows all): a token never
    mints more than it has (CONTRACT "Changes to the third round"), else ``InsufficientScope`` (403).
    ``expires_in_days`` sets an explicit expiry, else the global expiration applies. Raises ``TooManyTokens`` (409) when
    the user already holds ``AUTH_MAX_TOKENS_PER_USER`` live tokens, login tokens included; the
    user's row lock makes two concurrent creations count one after the other.
    """
    beyond = [ability for ability in abilities if not grants(granted, ability)]
    if beyond:
        raise InsufficientScope.for_ability(beyond[0])
    limit = current_app.config["AUTH_MAX_TOKENS_PER_USER"]
    lock_user(user)
    if db.session.scalar(select(func.count()).select_from(AccessToken).where(*_live(user))) >= limit:
        raise TooManyTokens.over_limit(limit)
    lifetime = None if expires_in_days is None else timedelta(days=expires_in_days)
    return tokens.issue(user, lifetime, name=name, abilities=abilities, client=client)


def revoke_token(user, token_id):
    """Revoke the user's token ``token_id`` and its family's rotated-out tokens.

    Raises ``NotFound`` (404) for an id that is not one of the user's tokens, another user's
    included, so that ids reveal nothing.
    """
    token = db.session.scalar(select(AccessToken).where(AccessToken.id == token_id, AccessToken.user_id == user.id))
    if token is None:
        raise NotFound("No token of yours has this id.")
    tokens.revoke(token)


def logout_all(user, current, except_current=False):
    """Delete every token of ``user`` and every token rotated out of them; keep ``current``'s family if asked."""
    live, rotated = [AccessToken.user_id == user.id], [RotatedToken.user_id == user.id]
    if except_current:
        live.append(AccessToken.id != current.id)
        rotated.append(RotatedToken.family_id != tokens.family_of(current))
    for model, where in ((AccessToken, live), (RotatedToken, rotated)):
        db.session.execute(delete(model).where(*where).execution_options(synchronize_session=False))
