from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow

PENDING, DELIVERED, DEAD = "pending", "delivered", "dead"


class NotificationDelivery(db.Model):
    """One notification to send on one channel: a row of the transactional outbox (issue 10).

    Written in the transaction that writes the notification, so a rolled-back webhook queues
    nothing. ``status`` is ``pending`` until sent (``delivered``) or out of attempts (``dead``).
    ``next_attempt_at`` is when a worker may take it next: a claim pushes it forward by a lease,
    so a worker that dies mid-send leaves the row to be taken again once the lease ends.
    """

    __tablename__ = "notification_deliveries"
    __table_args__ = (
        UniqueConstraint("notification_id", "channel"),
        Index("ix_notification_deliveries_due", "status", "next_attempt_at"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    notification_id: Mapped[int] = mapped_column(ForeignKey("notifications.id", ondelete="CASCADE"))
    channel: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_error: Mapped[str | None] = mapped_column(String(1000))
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    notification = relationship("Notification")

    def __repr__(self):
        return f"<NotificationDelivery {self.id} {self.channel} {self.status}>"
