"""``Billable``: what pays, a user or an organisation (STYLE "One billable concept"; Pay's ``Pay::Customer``
``belongs_to :owner``, in our terms).

A billable model has its own Stripe customer and the billing columns this mixin declares on its table
(``provider_id``, ``plan``, ``pm_type``, ``pm_last_four``, ``pm_exp_month``, ``pm_exp_year``,
``idempotency_token``, ``created_at``, ``updated_at``; their meaning is in ``User``'s docstring) and a
``subscriptions`` relationship of its own; rows it owns (subscriptions,
promotion redemptions, notifications' subject) carry ``<kind>_id``. Billing code receives a billable and
uses only that, so each rule of rounds 1-4 has one path whatever pays.
"""
import secrets
from datetime import datetime

from sqlalchemy import SmallInteger, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import UTCDateTime
from app.timeutil import utcnow


class Billable:
    """Mixin of ``User`` and ``Organization``; ``kind`` names the model and its foreign-key column."""

    kind: str  # "user" or "organization": rows owned by a billable have a "<kind>_id" column
    noun: str  # how a report names one: "user", "organisation"
    # Whether its subscription's quantity is the service's to set (``billing.seats.seat_count``): seats can
    # drift at Stripe with no subscription row showing it, so ``flask reconcile`` checks every one.
    seated = False

    provider_id: Mapped[str | None] = mapped_column(String(255), unique=True)
    plan: Mapped[str | None] = mapped_column(String(64))
    pm_type: Mapped[str | None] = mapped_column(String(32))
    pm_last_four: Mapped[str | None] = mapped_column(String(4))
    pm_exp_month: Mapped[int | None] = mapped_column(SmallInteger)
    pm_exp_year: Mapped[int | None] = mapped_column(SmallInteger)
    idempotency_token: Mapped[str] = mapped_column(String(32), unique=True, default=lambda: secrets.token_hex(16))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    @property
    def billable_key(self):
        """``"<kind>:<id>"``: the key of its rate limits, logs and ``sync`` reports (unique across kinds)."""
        return f"{self.kind}:{self.id}"

    @classmethod
    def by_customer(cls, customer_id):
        """The row whose Stripe customer is ``customer_id``, or ``None``."""
        return db.session.scalars(select(cls).where(cls.provider_id == customer_id)).first()

    @classmethod
    def by_id(cls, billable_id):
        """The row of id ``billable_id``, or ``None``."""
        return db.session.get(cls, billable_id)

    @classmethod
    def with_customer(cls):
        """The select of the ids of every row with a Stripe customer, ordered by id."""
        return select(cls.id).where(cls.provider_id.is_not(None)).order_by(cls.id)

    @property
    def label(self):
        """How a command's line names it: a user's email, an organisation's ``"<id> (<name>)"``."""
        raise NotImplementedError

    @property
    def stripe_email(self):
        """The Stripe customer's ``email``: where Stripe sends receipts and invoices."""
        raise NotImplementedError

    @property
    def stripe_name(self):
        """The Stripe customer's ``name``."""
        raise NotImplementedError

    def customer_metadata(self):
        """The Stripe customer's ``metadata``: ``{"<kind>_id": "<id>"}``, to find us from the Dashboard."""
        return {f"{self.kind}_id": str(self.id)}

    def recipients(self):
        """The users notified of its billing (``User`` list): the user, or the organisation's owner and admins."""
        raise NotImplementedError

    def redeemer_keys(self):
        """The keys its promotion redemptions and trial records are kept under, which outlive it (SHA-256 hex)."""
        raise NotImplementedError

    def notification_data(self):
        """What a notification about its billing adds to ``data`` (``{}`` for a user's own)."""
        return {}

    def load(self):
        """Itself: what a receiver of ``quota_consumed`` calls to have the row, as on the check path's snapshot."""
        return self

    def owner_columns(self):
        """``{"<kind>_id": id}``: the foreign key of a row this billable owns, for the row's constructor."""
        return {f"{self.kind}_id": self.id}

    def owns(self, model):
        """The SQL condition "``model``'s row belongs to this billable" (``model`` has a ``<kind>_id`` column)."""
        return getattr(model, f"{self.kind}_id") == self.id

    def lock(self):
        """Serialise billing work on this billable (and, for a user, token creation) until the transaction ends.

        An UPDATE rather than ``SELECT ... FOR UPDATE`` because it locks on PostgreSQL and SQLite alike
        (on SQLite it takes the write lock at once, so a later write cannot fail on a stale snapshot).
        """
        lock_row(type(self), self.id)


def lock_row(model, row_id):
    """Touch the row's ``updated_at`` in an UPDATE: the row lock ``Billable.lock`` and ``lock_user`` take."""
    db.session.execute(update(model).where(model.id == row_id).values(updated_at=utcnow())
                       .execution_options(synchronize_session=False))
