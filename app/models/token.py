from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class AccessToken(db.Model):
    """A personal access token (SPEC 2 "Access token"). Only the SHA-256 hex digest of the secret is kept.

    ``expires_at`` is the token's own expiry; when ``None`` the global ``AUTH_TOKEN_EXPIRATION``
    (minutes after ``created_at``) applies, so changing that setting affects existing tokens.
    """

    __tablename__ = "personal_access_tokens"
    # Never reuse the id of a deleted row: a token id names one token for ever.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    token: Mapped[str] = mapped_column(String(64), unique=True)
    abilities: Mapped[list] = mapped_column(JSON, default=list)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    user = relationship("User", lazy="joined", innerjoin=True)

    def __repr__(self):
        return f"<AccessToken {self.id} user={self.user_id}>"
