"""Auth endpoints (SPEC 4, CONTRACT "Endpoints"). Views parse, call one service function, commit, answer."""
from flask import current_app, g, request

from app import jsonbody, presentation
from app.api import Blueprint
from app.auth import expiry, management, service, tokens
from app.auth.bearer import ability_required, auth_required, seen_client
from app.auth.schemas import (
    LoginSchema,
    LogoutAllSchema,
    PersonalTokenSchema,
    RegisterSchema,
    TokenCreateSchema,
    TokenPageSchema,
    TokenPathSchema,
    TokenSchema,
)
from app.extensions import db, limiter
from app.http import NO_STORE, no_store
from app.pagination import PageQuerySchema
from app.presentation import UserSchema

blp = Blueprint("auth", __name__, url_prefix="/auth", description="Personal access tokens")


def _token_body(token, plain_text):
    return {"token_type": "Bearer", "access_token": plain_text, "expires_at": expiry.effective_expiry(token)}


def _login_rate_key():
    # Per email and client address, so one attacker cannot lock a victim out from elsewhere.
    return f"{request.remote_addr or ''}|{str(jsonbody.email_of(request) or '').strip().lower()}"


def _client_rate_key():
    # The client address (``PROXY_FIX_X_FOR`` behind a proxy): one script cannot open accounts at will.
    return request.remote_addr or ""


@blp.route("/register", methods=["POST"])
@limiter.limit(lambda: current_app.config["AUTH_REGISTER_RATE_LIMIT"], key_func=_client_rate_key)
@blp.arguments(RegisterSchema)
@blp.response(201, UserSchema)
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def register(body):
    """Create an account and queue its verification email. No token is returned: login is the only
    credential exchange.

    429 ``rate_limited`` past ``AUTH_REGISTER_RATE_LIMIT`` accounts per client address (free trials
    are per account, so accounts are not free to open at will).
    """
    user = service.register_user(**body)
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/login", methods=["POST"])
@no_store
@limiter.limit(lambda: current_app.config["AUTH_LOGIN_RATE_LIMIT"], key_func=_login_rate_key)
@blp.arguments(LoginSchema)
@blp.response(200, TokenSchema, headers=NO_STORE)
@blp.alt_response(401, response="UNAUTHORIZED")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def login(body):
    """Exchange email and password for a bearer token.

    ``remember_me`` is honoured with ``AUTH_REMEMBER_ME`` on: 30 days when true, 2 hours when
    false (SPEC 4 rule 1); otherwise the token uses ``AUTH_TOKEN_EXPIRATION`` (minutes).
    Errors: 401 ``invalid_credentials`` (unknown email and wrong password alike), 429 ``rate_limited``.
    """
    token, plain_text = service.login(**body, client=seen_client())
    db.session.commit()
    return _token_body(token, plain_text)


@blp.route("/logout", methods=["POST"])
@auth_required
@blp.response(204)
def logout():
    """Delete the token this request was made with (SPEC 5 rule 6); other tokens stay valid."""
    tokens.revoke(g.current_token)
    db.session.commit()


@blp.route("/token/refresh", methods=["POST"])
@no_store
@auth_required
@blp.response(200, TokenSchema, headers=NO_STORE)
def refresh():
    """Delete the current token and issue a new one (rotation, SPEC 4 rule 2) with its name and abilities.

    An expired token gets 401 and the client is to log in again (SPEC 4 rule 3). Of concurrent
    refreshes of one token exactly one wins; the others get 401. A token rotated out is refused
    with 401; presented again ``AUTH_REFRESH_GRACE_SECONDS`` or more after its rotation, it also
    revokes its whole refresh family (``error_description="token reuse detected"``).
    """
    token, plain_text = tokens.rotate(g.current_token, seen_client())
    db.session.commit()
    return _token_body(token, plain_text)


@blp.route("/me", methods=["GET"])
@auth_required
@ability_required("profile:read")
@blp.response(200, UserSchema)
def me():
    """Return the current user with the plan they are entitled to now."""
    return presentation.present_user(g.current_user)


@blp.route("/tokens", methods=["GET"])
@auth_required
@ability_required("tokens:manage")
@blp.arguments(PageQuerySchema, location="query")
@blp.response(200, TokenPageSchema)
def list_tokens(query):
    """List the caller's live tokens, newest first (page with ``limit`` 1-100 and ``starting_after``).

    Never a secret or digest. ``last_used_at`` is accurate to a minute; ``current`` marks the
    token of this request. Needs ``tokens:manage``: the list shows every session's IP and user
    agent (CONTRACT "Changes to the third round").
    """
    rows, has_more = management.list_tokens(g.current_user, **query)
    return {"data": [management.present_token(row, g.current_token) for row in rows], "has_more": has_more}


@blp.route("/tokens", methods=["POST"])
@no_store
@auth_required
@ability_required("tokens:manage")
@blp.arguments(TokenCreateSchema)
@blp.response(201, PersonalTokenSchema, headers=NO_STORE)
@blp.alt_response(409, response="CONFLICT")
def create_token(body):
    """Create a named personal access token with the given abilities; its secret is shown only here.

    ``expires_in_days`` (1-366) sets its lifetime, else ``AUTH_TOKEN_EXPIRATION`` applies. 422
    ``validation_error`` naming unknown abilities or a bad field; 409 ``too_many_tokens`` when the
    caller holds ``AUTH_MAX_TOKENS_PER_USER`` live tokens (``details.limit``); 403 ``insufficient_scope``
    for an ability the calling token does not have (a login token has all).
    """
    token, plain_text = management.create_token(g.current_user, **body, client=seen_client(),
                                                 granted=g.current_token.abilities)
    db.session.commit()
    return {**_token_body(token, plain_text), "id": token.id, "name": token.name, "abilities": token.abilities}


@blp.route("/tokens/<token_id>", methods=["DELETE"])
@auth_required
@ability_required("tokens:manage")
@blp.arguments(TokenPathSchema, location="path")
@blp.response(204)
@blp.alt_response(404, response="NOT_FOUND")
def revoke_token(path, token_id):
    """Revoke one of the caller's tokens (the current one included); another user's id is 404, never 403."""
    management.revoke_token(g.current_user, path["token_id"])
    db.session.commit()


@blp.route("/logout-all", methods=["POST"])
@auth_required
@ability_required("tokens:manage")
@blp.arguments(LogoutAllSchema, required=False)
@blp.response(204)
def logout_all(body):
    """Delete every token of the caller, this one too unless ``except_current`` is true ("log out everywhere")."""
    management.logout_all(g.current_user, g.current_token, **body)
    db.session.commit()
