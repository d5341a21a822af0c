from datetime import datetime

from sqlalchemy import String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.account import address_hashes
from app.models.billable import Billable, lock_row
from app.models.types import BigIntId, UTCDateTime


class User(Billable, db.Model):
    """An account. ``email`` is stored lower-cased, which makes its unique index case-insensitive.

    ``provider_id`` is the Stripe customer id (SPEC's ``users.provider_id``); ``plan`` is the plan
    last committed by ``CommitPlan`` (``None`` means the free plan); ``pm_type``/``pm_last_four``
    mirror the customer's default payment method at the provider, and ``pm_exp_month``/``pm_exp_year``
    its card's expiry (Stripe's names; ``None`` for a method that is not a card). ``email_verified_at``
    is when the address in ``email`` was proved (a verification or email-change link), else ``None``.
    ``idempotency_token``
    is random, set once, and names the user in the provider's idempotency keys: user ids repeat
    across databases that share one Stripe account (staging, a developer's copy, a restored backup).
    """

    kind = "user"
    noun = "user"
    __tablename__ = "users"
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    name: Mapped[str | None] = mapped_column(String(255))
    email_verified_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    subscriptions = relationship("Subscription", back_populates="user", passive_deletes=True,
                                 order_by="Subscription.id")

    @property
    def label(self):
        return self.email

    @property
    def stripe_email(self):
        return self.email

    @property
    def stripe_name(self):
        return self.name

    def recipients(self):
        return [self]

    def redeemer_keys(self):
        """Every address the account has had (``account.address_hashes``), the current one first."""
        return address_hashes(self)

    def __repr__(self):
        return f"<User {self.id} {self.email}>"


def lock_user(user):
    """Serialise work per user (billing, token creation) until the transaction ends: ``Billable.lock``.

    ``user`` may be the bearer check's read-only snapshot (``models.snapshots``): only its id is used.
    """
    lock_row(User, user.id)
