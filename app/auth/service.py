"""Account operations behind the auth endpoints and CLI. Nothing here commits."""
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from app.auth import passwords, tokens
from app.errors import EmailTaken, InvalidCredentials
from app.extensions import db
from app.models import User
from app.models.account import remember_address
from app.notifications import notify_account


def normalise_email(email):
    """Return the stored form of an email: stripped and lower-cased (the unique key)."""
    return email.strip().lower()


def register_user(email, password, name=None):
    """Create and return a ``User`` and queue its verification email.

    Raises ``EmailTaken`` (409) when the email is already registered.
    """
    email = normalise_email(email)
    if db.session.scalar(select(User.id).where(User.email == email)) is not None:
        raise EmailTaken()
    user = User(email=email, password_hash=passwords.hash_password(password), name=name)
    db.session.add(user)
    try:
        db.session.flush()
    except IntegrityError:
        # Lost a race for the email. The failed INSERT has already aborted the transaction on
        # PostgreSQL, so rolling back is the only way on, for any caller.
        db.session.rollback()
        raise EmailTaken() from None
    remember_address(user)
    notify_account(user, "email_verification")
    return user


def login(email, password, remember_me=False, client=None):
    """Check credentials and issue a login token; return ``(AccessToken, plain_text)``.

    Raises ``InvalidCredentials`` for an unknown email and for a wrong password alike, after the
    same amount of hashing work. The token's lifetime follows SPEC 4 rule 1 (see
    ``tokens.login_lifetime``). A hash made with outdated parameters is upgraded on the way.
    ``client`` (``{"user_agent", "ip"}``) is recorded on the token for the token list.
    """
    user = db.session.scalars(select(User).where(User.email == normalise_email(email))).first()
    if not passwords.verify_password(user.password_hash if user else None, password):
        raise InvalidCredentials()
    if passwords.needs_rehash(user.password_hash):
        user.password_hash = passwords.hash_password(password)
    return tokens.issue(user, tokens.login_lifetime(remember_me), client=client)

