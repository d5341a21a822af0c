"""The Stripe Entitlements active features of each billable's customer (CONTRACT "Additions (sixth round)",
"Entitlements"): written only from what Stripe says, read without a Stripe call."""
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class StripeEntitlementSummary(db.Model):
    """One billable's active entitlement ``lookup_keys`` (sorted list of str), as Stripe's summary or list said.

    ``as_of`` is when that was current at Stripe: the event's ``created``, or now for a live read. An
    event older than it changes nothing (``app.entitlements.stripe_features``). ``billable`` is the
    unique key (``"user:1"``, ``"organization:org_..."``), as ``app.models.entitlement`` keeps it; the
    ``<kind>_id`` foreign key takes the row away with its account or organisation.
    """

    __tablename__ = "stripe_entitlements"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    billable: Mapped[str] = mapped_column(String(80), unique=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    organization_id: Mapped[str | None] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"),
                                                        index=True)
    lookup_keys: Mapped[list] = mapped_column(JSON, default=list)
    as_of: Mapped[datetime] = mapped_column(UTCDateTime)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    def __repr__(self):
        return f"<StripeEntitlementSummary {self.billable} {self.lookup_keys}>"
