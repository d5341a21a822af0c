"""Bearer authentication (RFC 6750): resolve the current token and user once per request."""
from functools import wraps

from flask import g, request
from flask_smorest import Blueprint

from app.auth import tokens
from app.errors import Unauthenticated
from app.extensions import db

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

    Raises ``Unauthenticated`` (401 with ``WWW-Authenticate``) for a missing, malformed, unknown,
    revoked or expired token. Documents the bearer security and the 401 in the OpenAPI document.
    """

    @wraps(view)
    def wrapper(*args, **kwargs):
        token = tokens.authenticate(_credential())
        if tokens.touch(token):
            # Committed before the view runs: the touch is an UPDATE, which holds the token's
            # row lock (on SQLite the database's write lock) until its transaction ends, and a
            # view may spend seconds on provider calls; nor is it lost when the view fails.
            db.session.commit()
        g.current_token = token
        g.current_user = token.user
        return view(*args, **kwargs)

    return Blueprint.doc(security=BEARER_SECURITY, responses={"401": "UNAUTHORIZED"})(wrapper)
