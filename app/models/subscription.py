from datetime import datetime

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.types import BigIntId, UTCDateTime
from app.timeutil import utcnow


class Subscription(db.Model):
    """The local copy of a provider subscription, written only from provider state (SPEC 1); what it entitles
    to is ``app.billing.statuses``' (``entitles``, ``on_grace_period``, ``waits_for_card``).

    ``provider_updated_at`` is the ``created`` time of the newest event applied (a sync counts as
    "now"), so an older event delivered late never rolls the row back (CONTRACT "Webhook processing").
    ``ends_at`` is when access ends: the period end of a cancellation scheduled at period end, or
    when the provider ended it.
    """

    __tablename__ = "subscriptions"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    # Its billable: a user or an organisation (``models.billable``), exactly one of the two.
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    organization_id: Mapped[str | None] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"),
                                                        index=True)
    type: Mapped[str] = mapped_column(String(64), default="default")
    provider_id: Mapped[str] = mapped_column(String(255), unique=True)
    provider_status: Mapped[str] = mapped_column(String(32))
    provider_price: Mapped[str | None] = mapped_column(String(255))
    quantity: Mapped[int | None] = mapped_column(Integer)
    default_payment_method: Mapped[str | None] = mapped_column(String(255))
    cancel_at_period_end: Mapped[bool] = mapped_column(Boolean, default=False)
    current_period_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    trial_ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    ends_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # Stripe's pending_update: a price or seat change waiting for its invoice to be paid.
    pending_price: Mapped[str | None] = mapped_column(String(255))
    pending_quantity: Mapped[int | None] = mapped_column(Integer)
    pending_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # A Stripe test clock (test mode): the subscription's "now" is the clock's frozen time.
    test_clock: Mapped[str | None] = mapped_column(String(255))
    # Stripe's first discount as ``objects.discount_of`` reads it: {"id", "coupon", "promotion_code", "end"}.
    discount: Mapped[dict | None] = mapped_column(JSON)
    # Stripe's ``billing_mode.type``: ``classic`` is migrated to ``flexible`` before its next change (CONTRACT
    # "Changes to the fifth round": credits never exceed what was paid); null until Stripe's answer names it.
    billing_mode: Mapped[str | None] = mapped_column(String(16))
    # Stripe's subscription schedule of it, as last read from Stripe (``app.billing.schedules``): {"schedule",
    # "ours", "price", "quantity", "at"}, price, quantity and at null when no later phase changes the plan (CONTRACT
    # "Plan changes at the period's end"); null without a schedule. The subscription's own events never write it.
    scheduled_change: Mapped[dict | None] = mapped_column(JSON)
    provider_created_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    provider_updated_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    user = relationship("User", back_populates="subscriptions")
    organization = relationship("Organization", back_populates="subscriptions")
    items = relationship("SubscriptionItem", back_populates="subscription", cascade="all, delete-orphan",
                         passive_deletes=True, order_by="SubscriptionItem.id")

    @property
    def licensed_items(self):
        """The items that carry the plan and its seats: all but the plan's metered items, which have no
        ``quantity`` (Stripe gives a licensed item one, always; CONTRACT "Usage-based billing")."""
        return [item for item in self.items if item.quantity is not None]

    @property
    def seat_item(self):
        """The one licensed item, whose ``quantity`` is the seats (a plan's metered items ride along uncounted), or
        ``None`` when there is not exactly one."""
        licensed = self.licensed_items
        return licensed[0] if len(licensed) == 1 else None

    def __repr__(self):
        return f"<Subscription {self.provider_id} {self.provider_status}>"


class SubscriptionItem(db.Model):
    """One price line of a subscription."""

    __tablename__ = "subscription_items"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    subscription_id: Mapped[int] = mapped_column(ForeignKey("subscriptions.id", ondelete="CASCADE"), index=True)
    provider_id: Mapped[str] = mapped_column(String(255), unique=True)
    provider_product: Mapped[str | None] = mapped_column(String(255))
    provider_price: Mapped[str] = mapped_column(String(255))
    quantity: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    subscription = relationship("Subscription", back_populates="items")


class TrialFingerprint(db.Model):
    """A card (Stripe's ``card.fingerprint``, the same for one card number within an account) that
    saved a free trial's card here: another trial with it ends at once (CONTRACT "Changes to the
    third round"). Kept when the account is deleted, so that a card earns one trial, ever."""

    __tablename__ = "trial_fingerprints"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(255), unique=True)
    provider_subscription: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class TrialRedeemer(db.Model):
    """A person who started a subscription here, for themselves or for an organisation they act for:
    ``redeemer`` is the SHA-256 of an address they had (one row per address). Their first subscription
    was their trial's one chance, so no later one, whatever it pays for, is a trial (CONTRACT
    "Additions (sixth round)": "Once per person" means per person). No foreign key: it outlives them."""

    __tablename__ = "trial_redeemers"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    redeemer: Mapped[str] = mapped_column(String(64), unique=True)
    provider_subscription: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PromotionRedemption(db.Model):
    """A promotion code a subscription carried (Stripe's ``discounts[].promotion_code``), kept per address.

    ``redeemer`` is the SHA-256 of a normalised address the account had (one row per address it ever
    had, ``app.billing.redemptions.remember``), and no foreign key: the row outlives the account, so
    the address registered again cannot redeem the code again (CONTRACT "Changes to the fourth round").
    """

    __tablename__ = "promotion_redemptions"
    __table_args__ = (UniqueConstraint("redeemer", "promotion_code"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    redeemer: Mapped[str] = mapped_column(String(64))
    promotion_code: Mapped[str] = mapped_column(String(255))
    provider_subscription: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class ProrationQuote(db.Model):
    """A ``proration_date`` (Unix seconds) a swap preview of the subscription issued: the only values a
    swap accepts, for 10 minutes (CONTRACT "Changes to the fourth round"). Older rows are dropped on insert."""

    __tablename__ = "proration_quotes"

    provider_subscription: Mapped[str] = mapped_column(String(255), primary_key=True)
    proration_date: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
