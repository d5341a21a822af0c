from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow

# Bounds of what a token records about the client that created it (a user agent can be any length).
USER_AGENT_LENGTH = 512
IP_LENGTH = 45  # the longest textual IPv6 address, IPv4-mapped


class AccessToken(db.Model):
    """A personal access token (SPEC 2 "Access token"). Only the SHA-256 hex digest of the secret is kept.

    ``expires_at`` is the token's own expiry; when ``None`` the global ``AUTH_TOKEN_EXPIRATION``
    (minutes after ``created_at``) applies, so changing that setting affects existing tokens.
    ``family_id`` is the id of the token its refresh chain started from (``None``: this token started
    it); ``user_agent`` and ``ip`` are what the request that created it showed.
    """

    __tablename__ = "personal_access_tokens"
    # Never reuse the id of a deleted row: a token id names one token for ever.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    token: Mapped[str] = mapped_column(String(64), unique=True)
    abilities: Mapped[list] = mapped_column(JSON, default=list)
    family_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    user_agent: Mapped[str | None] = mapped_column(String(USER_AGENT_LENGTH))
    ip: Mapped[str | None] = mapped_column(String(IP_LENGTH))
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    user = relationship("User", lazy="joined", innerjoin=True)

    def __repr__(self):
        return f"<AccessToken {self.id} user={self.user_id}>"


class RotatedToken(db.Model):
    """A token refresh rotated out, kept so that a replay of it is recognised (reuse detection).

    The row of the token itself is deleted by the refresh (SPEC 3); this one keeps its id, digest,
    family and lifetime, and when it was rotated out. ``flask prune-tokens`` deletes it once the
    token it stands for would have expired, as it deletes tokens.
    """

    __tablename__ = "rotated_tokens"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    family_id: Mapped[int] = mapped_column(BigInteger, index=True)
    token: Mapped[str] = mapped_column(String(64))
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    rotated_at: Mapped[datetime] = mapped_column(UTCDateTime)

    def __repr__(self):
        return f"<RotatedToken {self.id} family={self.family_id}>"
