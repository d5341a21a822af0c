import hashlib
from datetime import datetime

from sqlalchemy import ForeignKey, String, select
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class DeletedSubscriber(db.Model):
    """The SHA-256 (hex) of the normalised address of a deleted account that ever subscribed.

    All the service keeps of such an account: enough to refuse a second free trial to the same
    address registered again (CONTRACT "Accounts"), nothing that names the person.
    """

    __tablename__ = "deleted_subscribers"

    email_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    deleted_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class AddressHistory(db.Model):
    """The SHA-256 (hex) of every normalised address an account has had, the current one included.

    What the records that outlive an account are keyed by: promotion redemptions and, once the
    account is deleted, ``DeletedSubscriber`` (CONTRACT "Changes to the fourth round").
    """

    __tablename__ = "address_history"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    email_sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PasswordResetRequest(db.Model):
    """A ``POST /auth/password/forgot`` waiting for the delivery worker, known address or not.

    The request writes this one row whatever the address, so a known and an unknown address cost
    the same; the worker looks the address up, queues the reset email for a known one and deletes
    the row (``app.auth.recovery.expand_reset_requests``). No token: the worker mints it when it sends.
    """

    __tablename__ = "password_reset_requests"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    email: Mapped[str] = mapped_column(String(320))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


def address_sha256(email):
    """The SHA-256 (hex) of a normalised (stripped, lower-cased) address: what outlives an account."""
    return hashlib.sha256(email.strip().lower().encode()).hexdigest()


def remember_address(user):
    """Add the user's current address to their ``AddressHistory`` (a no-op when it is there). Nothing commits."""
    digest = address_sha256(user.email)
    if user.id is None:
        db.session.flush()
    if db.session.get(AddressHistory, (user.id, digest)) is None:
        db.session.add(AddressHistory(user_id=user.id, email_sha256=digest))
    return digest


def address_hashes(user):
    """The SHA-256 of every address the user has had, the current one first."""
    current = address_sha256(user.email)
    earlier = db.session.scalars(select(AddressHistory.email_sha256).where(
        AddressHistory.user_id == user.id, AddressHistory.email_sha256 != current)).all()
    return [current, *earlier]
