from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class WebhookEvent(db.Model):
    """The ledger of provider events: each event id is processed at most once (CONTRACT).

    The row is written in the same transaction as the event's effects, so a failed delivery leaves
    no row and the provider's retry processes the event afresh.
    """

    __tablename__ = "webhook_events"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(255))
    created: Mapped[datetime] = mapped_column(UTCDateTime)
    received_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    processed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class FailedWebhookEvent(db.Model):
    """A provider event whose processing failed, kept for the operator and for replay (issue 11).

    Written after the event's own transaction rolled back, in a transaction of its own, so it
    survives the failure; ``resolved_at`` is set by the transaction that finally processes the
    event (a redelivery or a replay). ``payload`` is the verified raw body as the provider sent it:
    Stripe events carry no secrets and no card numbers (only brand, last four and expiry).
    """

    __tablename__ = "failed_webhook_events"

    id: Mapped[str] = mapped_column(String(255), primary_key=True)
    type: Mapped[str] = mapped_column(String(255))
    customer: Mapped[str | None] = mapped_column(String(255))
    payload: Mapped[str] = mapped_column(Text)
    error_class: Mapped[str] = mapped_column(String(255))
    error_message: Mapped[str] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    first_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_failed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)


class Notification(db.Model):
    """A lifecycle notification for a user (CONTRACT "Notifications"); at most one per user, event and kind
    (an organisation's billing notifies each of its owner and admins, CONTRACT "Organisations")."""

    __tablename__ = "notifications"
    __table_args__ = (UniqueConstraint("user_id", "event_id", "kind"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(64))
    event_id: Mapped[str] = mapped_column(String(255))
    data: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
