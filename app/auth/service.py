"""Account operations behind the auth endpoints and CLI. Nothing here commits."""
from flask import current_app
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.auth import passwords, tokens
from app.errors import EmailTaken, InvalidCredentials
from app.extensions import db
from app.models import User


def normalise_email(email):
    """Return the stored form of an email: stripped and lower-cased (the unique key)."""
    return email.strip().lower()


def register_user(email, password, name=None):
    """Create and return a ``User``; raises ``EmailTaken`` (409) when the email is already registered."""
    user = User(email=normalise_email(email), password_hash=passwords.hash_password(password), name=name)
    try:
        with db.session.begin_nested():
            db.session.add(user)
    except IntegrityError:
        raise EmailTaken() from None
    return user


def login(email, password, remember_me=False):
    """Check credentials and issue a token; return ``(AccessToken, plain_text)``.

    Raises ``InvalidCredentials`` for an unknown email and for a wrong password alike, after the
    same amount of hashing work. The token's lifetime follows SPEC 4 rule 1 (see
    ``tokens.login_lifetime``). A hash made with outdated parameters is upgraded on the way.
    """
    user = db.session.scalars(select(User).where(User.email == normalise_email(email))).first()
    if not passwords.verify_password(user.password_hash if user else None, password):
        raise InvalidCredentials()
    if passwords.needs_rehash(user.password_hash):
        user.password_hash = passwords.hash_password(password)
    return tokens.issue(user, tokens.login_lifetime(remember_me))


def present_user(user):
    """Return the CONTRACT "User" resource of ``user`` as a dict for ``UserSchema``."""
    card = None
    if user.pm_type and user.pm_last_four:
        card = {"brand": user.pm_type, "last4": user.pm_last_four}
    return {
        "id": user.id,
        "email": user.email,
        "name": user.name,
        "plan": user.plan or current_app.config["FREE_PLAN"],
        "card": card,
        "subscription": None,
    }
