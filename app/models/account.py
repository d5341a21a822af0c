from datetime import datetime

from sqlalchemy import String
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
