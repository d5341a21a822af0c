"""Seat changes (CONTRACT "Additions (sixth round)", "Changes to the fifth round"): every change of an
organisation's seat quantity sent to Stripe, recorded with Stripe's answer.

A change Stripe applied at once is ``applied``. One whose charge was declined is ``held``: Stripe keeps
it in the subscription's ``pending_update`` (https://docs.stripe.com/billing/subscriptions/pending-updates)
until its ``invoice`` is paid, and the seat is the invitee's (``user_id``, ``role``) meanwhile. Paid,
it is ``admitted`` (the invitee is a member); unpaid when Stripe's pending update expires, ``expired``.
"""
from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.types import UTCDateTime
from app.timeutil import utcnow

APPLIED, HELD, ADMITTED, EXPIRED = "applied", "held", "admitted", "expired"


class SeatChange(db.Model):
    """One absolute ``quantity`` sent to Stripe for an organisation's subscription, and what came of it."""

    __tablename__ = "seat_changes"
    __table_args__ = (Index("ix_seat_changes_organization_status", "organization_id", "status"),)

    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"))
    provider_subscription: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str] = mapped_column(String(16))
    previous_quantity: Mapped[int] = mapped_column(Integer)
    quantity: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    # Stripe's invoice for the change (``always_invoice``): the one that pays a held seat.
    invoice: Mapped[str | None] = mapped_column(String(255), index=True)
    # The invitee a held seat waits for, and the role and invitation they accepted.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    role: Mapped[str | None] = mapped_column(String(16))
    invitation_id: Mapped[str | None] = mapped_column(String(32))
    # When Stripe drops the pending update unpaid (``pending_update.expires_at``).
    expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    organization = relationship("Organization")


def held_on(organization_id, provider_subscriptions):
    """A select of the organisation's seat changes held on one of ``provider_subscriptions`` (Stripe ids, or a
    select of them): what counts as a seat waiting for payment."""
    return select(SeatChange).where(SeatChange.organization_id == organization_id, SeatChange.status == HELD,
                                    SeatChange.provider_subscription.in_(provider_subscriptions))

