from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class IdempotencyKey(db.Model):
    """The first answer to a request sent with an ``Idempotency-Key`` header, kept per user for a day.

    ``request_digest`` is the SHA-256 (hex) of the method, path and body, so the same key with
    another request is told apart; ``body`` is the answer's JSON text, replayed as it was.
    """

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("user_id", "key"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(255))
    request_digest: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column(Integer)
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)

    def __repr__(self):
        return f"<IdempotencyKey {self.user_id} {self.key!r} {self.status}>"
