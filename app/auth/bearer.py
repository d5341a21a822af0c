"""Bearer authentication (RFC 6750): resolve the current token and user once per request, check abilities."""
from functools import wraps

from flask import current_app, g, request

from app.api import Blueprint
from app.auth import abilities, tokens
from app.billing.call_costs import cost_of
from app.errors import InsufficientScope, TokenReused, Unauthenticated
from app.extensions import db, limiter
from app.models import User
from app.models.token import IP_LENGTH, USER_AGENT_LENGTH

BEARER_SECURITY = [{"bearerAuth": []}]


def _credential():
    header = request.headers.get("Authorization", "")
    scheme, _, credential = header.strip().partition(" ")
    if not header:
        raise Unauthenticated.missing_token()
    if scheme.lower() != "bearer" or not credential.strip():
        raise Unauthenticated.invalid_token("expected 'Authorization: Bearer <token>'")
    return credential.strip()


def auth_required(view):
    """Require a valid bearer token; ``g.current_token`` and ``g.current_user`` are set for the view.

    Both are read-only snapshots of the rows (``tokens.authenticate``); a view that changes the
    user takes ``current_user_for_update()``.

    Raises ``Unauthenticated`` (401 with ``WWW-Authenticate``) for a missing, malformed, unknown,
    revoked, expired or rotated-out token. Documents the bearer security and the 401 in the
    OpenAPI document. Put ``ability_required`` under it where the endpoint needs an ability.
    """

    @wraps(view)
    def wrapper(*args, **kwargs):
        try:
            token = tokens.authenticate(_credential())
        except TokenReused:
            db.session.commit()  # the family's revocation stands although this request fails
            raise
        if tokens.touch(token):
            # Committed before the view runs: the touch is an UPDATE, which holds the token's
            # row lock (on SQLite the database's write lock) until its transaction ends, and a
            # view may spend seconds on provider calls; nor is it lost when the view fails.
            db.session.commit()
        g.current_token = token
        g.current_user = token.user
        return view(*args, **kwargs)

    return Blueprint.doc(security=BEARER_SECURITY, responses={"401": "UNAUTHORIZED"})(wrapper)


def current_user_for_update():
    """Return the request's user as an ORM ``User``, for a view that changes it or its subscriptions.

    One more query than the snapshot in ``g.current_user``, on the paths that write. Raises
    ``Unauthenticated`` if the user was deleted since the token was checked.
    """
    user = db.session.get(User, g.current_user.id)
    if user is None:
        raise Unauthenticated.invalid_token("unknown or revoked token")
    return user


def ability_required(ability):
    """Require that the current token may use ``ability`` (Sanctum's ``CheckAbilities``), under ``auth_required``.

    Raises ``InsufficientScope`` (403 ``insufficient_scope`` with an RFC 6750 3.1 challenge naming
    the ability). The ability is documented in the OpenAPI operation (``x-abilities`` and the 403).
    """
    if ability not in abilities.ABILITIES:
        raise ValueError(f"unknown ability {ability!r}")

    def decorator(view):
        @wraps(view)
        def wrapper(*args, **kwargs):
            if not abilities.grants(g.current_token.abilities, ability):
                raise InsufficientScope.for_ability(ability)
            return view(*args, **kwargs)

        return Blueprint.doc(**{"x-abilities": [ability]}, responses={"403": "FORBIDDEN"})(wrapper)

    return decorator


# The one count that every endpoint calling Stripe for a user shares.
PROVIDER_CALLS_SCOPE = "provider-calls"



def provider_calls_limited(view):
    """Limit the endpoints that call Stripe on the current user's behalf, under ``auth_required``.

    At most ``PROVIDER_CALLS_RATE_LIMIT`` Stripe calls per user across all of them, each request
    counted at its endpoint's most (``app.billing.call_costs``) on the limiter's store (shared by every
    worker and host with Redis), so that one token in a hostile script cannot spend the Stripe
    account's request rate (about 100/s live, 25/s test) that every other user's payments need.
    Past it: 429 ``rate_limited`` with ``Retry-After``, before any provider call (CONTRACT "Changes
    to the third round" and "to the fourth round").
    """
    limited = limiter.limit(lambda: current_app.config["PROVIDER_CALLS_RATE_LIMIT"],
                            key_func=lambda: str(g.current_user.id), scope=PROVIDER_CALLS_SCOPE,
                            cost=lambda: cost_of(request.endpoint))(view)
    return Blueprint.doc(responses={"429": "TOO_MANY_REQUESTS"})(limited)


def seen_client():
    """Return ``{"user_agent", "ip"}`` of the current request, cut to what a token stores."""
    # PostgreSQL text cannot hold NUL; any other header character is storable.
    user_agent = request.headers.get("User-Agent", "").replace("\x00", "") or None
    return {"user_agent": user_agent[:USER_AGENT_LENGTH] if user_agent else None,
            "ip": (request.remote_addr or "")[:IP_LENGTH] or None}
