"""The quota ledger, its consumes and reservations, and support overrides (CONTRACT "Additions (sixth round)",
"Entitlements").

Each row names its billable twice: ``billable`` (``"user:1"``, ``"organization:org_..."``: the key the
unique constraints use, which a pair of nullable foreign keys cannot be on PostgreSQL) and the
``<kind>_id`` foreign key, so the rows go with the account or organisation (``ON DELETE CASCADE``).
"""
from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow

HELD, SETTLED, RELEASED, EXPIRED = "held", "settled", "released", "expired"


class _Owned:
    billable: Mapped[str] = mapped_column(String(80))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    organization_id: Mapped[str | None] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"),
                                                        index=True)


class EntitlementBalance(_Owned, db.Model):
    """What a billable used and holds reserved of one quota feature in one period.

    ``period`` is the period's key: ``"never"`` (``reset: never``), ``"month:2026-11"`` (the free
    plan's calendar month, UTC) or ``"until:<Unix seconds>"`` (the subscription's period ending then,
    as Stripe reported it); ``reset_at`` is when it ends (``None`` for never). The limit is not stored:
    it is the plan's (or an override's) at each consume, so a plan change applies at once and keeps
    ``used``. ``used`` is the sum of the consumes and settled reservations of the period; ``reserved``
    the sum of its held reservations' amounts. Changed only by single conditional UPDATEs
    (``app.entitlements.ledger``).
    """

    __tablename__ = "entitlement_balances"
    __table_args__ = (UniqueConstraint("billable", "feature", "period"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    feature: Mapped[str] = mapped_column(String(64))
    period: Mapped[str] = mapped_column(String(32))
    reset_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    used: Mapped[int] = mapped_column(BigInteger, default=0)
    reserved: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EntitlementConsume(_Owned, db.Model):
    """One consume by its ``identifier`` (unique, kept 35 days): the first answer, returned again to a retry.

    ``required`` what was asked, ``consumed`` what was taken (``required`` or 0); ``answer`` the JSON
    body first returned. ``balance_id`` is the balance it took from (``None`` when refused without one).
    """

    __tablename__ = "entitlement_consumes"
    __table_args__ = (Index("ix_entitlement_consumes_created_at", "created_at"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    identifier: Mapped[str] = mapped_column(String(100), unique=True)
    feature: Mapped[str] = mapped_column(String(64))
    required: Mapped[int] = mapped_column(BigInteger)
    consumed: Mapped[int] = mapped_column(BigInteger, default=0)
    balance_id: Mapped[int | None] = mapped_column(ForeignKey("entitlement_balances.id", ondelete="CASCADE"),
                                                   index=True)
    answer: Mapped[dict | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EntitlementReservation(_Owned, db.Model):
    """Units of a balance held for a long operation until settled, released or expired (``expires_at``).

    ``id`` is ``rsv_`` and random (it is the client's handle); ``identifier`` the client's idempotency
    key (unique). ``status``: ``held``, then ``settled`` (``settled`` units consumed, the rest
    returned), ``released`` or ``expired`` (all returned).
    """

    __tablename__ = "entitlement_reservations"
    __table_args__ = (Index("ix_entitlement_reservations_due", "balance_id", "status", "expires_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    identifier: Mapped[str] = mapped_column(String(100), unique=True)
    feature: Mapped[str] = mapped_column(String(64))
    balance_id: Mapped[int] = mapped_column(ForeignKey("entitlement_balances.id", ondelete="CASCADE"))
    amount: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16), default=HELD)
    settled: Mapped[int | None] = mapped_column(BigInteger)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EntitlementOverride(_Owned, db.Model):
    """A support override of one feature for one billable (``flask entitlements grant``): ``enabled`` for a
    boolean, ``limit`` for a quota, until ``until`` (``None``: no end) or ``revoked_at``.

    Kept with who (``granted_by``, ``revoked_by``), when and why (``reason``); ``source: "override"``.
    ``expiry_announced_at``: when ``flask entitlements announce-expired`` told the app that ``until`` passed.
    """

    __tablename__ = "entitlement_overrides"
    __table_args__ = (Index("ix_entitlement_overrides_billable", "billable", "feature"),
                      Index("ix_entitlement_overrides_until", "until"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    feature: Mapped[str] = mapped_column(String(64))
    enabled: Mapped[bool | None] = mapped_column(Boolean)
    limit: Mapped[int | None] = mapped_column(BigInteger)
    until: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reason: Mapped[str] = mapped_column(String(500))
    granted_by: Mapped[str] = mapped_column(String(255))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    revoked_by: Mapped[str | None] = mapped_column(String(255))
    expiry_announced_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EntitlementVersion(db.Model):
    """A random ``version`` per billable (``"user:1"``), new on every write to its subscriptions, overrides or
    Stripe features and on its deletion: written by PostgreSQL triggers only (migration 0024), read by the
    consume's one-round-trip path (``app.entitlements.fast``) to know its copy of the billable is current.
    No row: never written since the database began."""

    __tablename__ = "entitlement_versions"

    billable: Mapped[str] = mapped_column(String(80), primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger)
