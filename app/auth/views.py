"""Auth endpoints (SPEC 4, CONTRACT "Endpoints"). Views parse, call one service function, commit, answer."""
from flask import current_app, g, request
from flask_limiter.util import get_remote_address
from flask_smorest import Blueprint

from app import presentation
from app.auth import service, tokens
from app.auth.bearer import auth_required
from app.auth.schemas import LoginSchema, RegisterSchema, TokenSchema
from app.extensions import db, limiter
from app.presentation import UserSchema

blp = Blueprint("auth", __name__, url_prefix="/auth", description="Personal access tokens")


def _token_body(token, plain_text):
    return {"token_type": "Bearer", "access_token": plain_text, "expires_at": tokens.effective_expiry(token)}


def _login_rate_key():
    # Per email and client address, so one attacker cannot lock a victim out from elsewhere.
    body = request.get_json(silent=True)
    email = body.get("email") if isinstance(body, dict) else None
    return f"{get_remote_address()}|{str(email or '').strip().lower()}"


@blp.route("/register", methods=["POST"])
@blp.arguments(RegisterSchema)
@blp.response(201, UserSchema)
@blp.alt_response(409, response="CONFLICT")
def register(body):
    """Create an account. No token is returned: login is the only credential exchange."""
    user = service.register_user(**body)
    db.session.commit()
    return presentation.present_user(user)


@blp.route("/login", methods=["POST"])
@limiter.limit(lambda: current_app.config["AUTH_LOGIN_RATE_LIMIT"], key_func=_login_rate_key)
@blp.arguments(LoginSchema)
@blp.response(200, TokenSchema)
@blp.alt_response(401, response="UNAUTHORIZED")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def login(body):
    """Exchange email and password for a bearer token.

    ``remember_me`` is honoured with ``AUTH_REMEMBER_ME`` on: 30 days when true, 2 hours when
    false (SPEC 4 rule 1); otherwise the token uses ``AUTH_TOKEN_EXPIRATION`` (minutes).
    Errors: 401 ``invalid_credentials`` (unknown email and wrong password alike), 429 ``rate_limited``.
    """
    token, plain_text = service.login(**body)
    db.session.commit()
    return _token_body(token, plain_text)


@blp.route("/logout", methods=["POST"])
@auth_required
@blp.response(204)
def logout():
    """Delete the token this request was made with (SPEC 5 rule 6)."""
    tokens.revoke(g.current_token)
    db.session.commit()


@blp.route("/token/refresh", methods=["POST"])
@auth_required
@blp.response(200, TokenSchema)
def refresh():
    """Delete the current token and issue a new one (rotation, SPEC 4 rule 2).

    An expired token gets 401 and the client is to log in again (SPEC 4 rule 3).
    """
    token, plain_text = tokens.rotate(g.current_token)
    db.session.commit()
    return _token_body(token, plain_text)


@blp.route("/me", methods=["GET"])
@auth_required
@blp.response(200, UserSchema)
def me():
    """Return the current user with the plan they are entitled to now."""
    return presentation.present_user(g.current_user)
