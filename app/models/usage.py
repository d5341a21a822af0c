"""Service keys and the usage ledger (CONTRACT "Additions (fifth round)": "Usage-based billing")."""
from datetime import datetime

from sqlalchemy import JSON, BigInteger, ForeignKey, Index, Integer, String, update
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"


class ServiceKey(db.Model):
    """A credential of the client app's own servers (``flask create-service-key``), never a user's.

    Only the SHA-256 hex digest of the secret is kept, as for access tokens; ``revoked_at`` set
    means the key authenticates nothing any more (the row stays, so the events it reported keep
    naming it).
    """

    __tablename__ = "service_keys"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    name: Mapped[str] = mapped_column(String(255))
    token: Mapped[str] = mapped_column(String(64), unique=True)
    abilities: Mapped[list] = mapped_column(JSON, default=list)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self):
        return f"<ServiceKey {self.id} {self.name!r}>"


class UsageEvent(db.Model):
    """One accepted usage event: a row of the ledger the delivery worker sends to Stripe's meter events.

    ``identifier`` is the reporter's idempotency key and the ``identifier`` Stripe receives, unique
    here for as long as the row is kept (``USAGE_RETENTION_DAYS``, at least Stripe's 35-day window).
    ``customer`` is the Stripe customer id resolved when it was accepted; ``timestamp`` the usage's
    time, Unix seconds. ``status``: ``pending`` until Stripe has it (``delivered``) or refused it
    (``failed``, with Stripe's message in ``last_error``). ``next_attempt_at`` is when a worker may
    take it next: a claim moves it forward by a lease, as in the notification outbox.
    """

    __tablename__ = "usage_events"
    __table_args__ = (
        Index("ix_usage_events_due", "status", "next_attempt_at"),
        Index("ix_usage_events_customer", "customer", "status"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    identifier: Mapped[str] = mapped_column(String(100), unique=True)
    event_name: Mapped[str] = mapped_column(String(100))
    customer: Mapped[str] = mapped_column(String(255))
    value: Mapped[int] = mapped_column(BigInteger)
    timestamp: Mapped[int] = mapped_column(BigInteger)
    service_key_id: Mapped[int | None] = mapped_column(ForeignKey("service_keys.id", ondelete="SET NULL"))
    status: Mapped[str] = mapped_column(String(16), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_error: Mapped[str | None] = mapped_column(String(1000))
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    def __repr__(self):
        return f"<UsageEvent {self.id} {self.identifier!r} {self.status}>"


ABANDONED = "not billed: its Stripe customer was deleted (the account or organisation) before delivery"


def abandon_pending(customer):
    """Mark the pending events of the Stripe customer ``customer`` ``failed`` (``ABANDONED``); return how many.

    For a customer being deleted (``auth.profile.delete_customer``, after Stripe), which delivered its pending
    events before its final invoice (``usage.delivery.deliver_for_deletion``): what is left here was accepted
    during the deletion, or belongs to a customer a retry found deleted, and would reach a customer whom no
    invoice bills. The rows stay (their identifiers still count as duplicates; ``flask usage-events
    --failed`` lists them). The caller commits.
    """
    return db.session.execute(update(UsageEvent).where(UsageEvent.customer == customer, UsageEvent.status == PENDING)
                              .values(status=FAILED, last_error=ABANDONED)
                              .execution_options(synchronize_session=False)).rowcount
