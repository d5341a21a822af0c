"""Organisations (CONTRACT "Additions (fifth round)", "Organisations"): a billable of its own, its members
and their roles, and the invitations it sent.

Ids are opaque strings (``org_...``, ``inv_...``) from 96 random bits: never reused, never guessed.
"""
import secrets
from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint, func, select
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.extensions import db
from app.models.account import address_sha256
from app.models.billable import Billable
from app.models.types import UTCDateTime
from app.models.user import User
from app.timeutil import utcnow

OWNER, ADMIN, MEMBER = "owner", "admin", "member"
# The roles that manage members, invitations and billing.
MANAGERS = frozenset({OWNER, ADMIN})


def _opaque(prefix):
    return lambda: f"{prefix}_{secrets.token_hex(12)}"


class Organization(Billable, db.Model):
    """A team that pays for itself: its own Stripe customer (``provider_id``), billing columns as ``User``'s.

    ``billing_email`` is the Stripe customer's ``email`` when set, else the owner's address is.
    """

    kind = "organization"
    noun = "organisation"
    seated = True
    __tablename__ = "organizations"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=_opaque("org"))
    name: Mapped[str] = mapped_column(String(255))
    billing_email: Mapped[str | None] = mapped_column(String(320))

    subscriptions = relationship("Subscription", back_populates="organization", passive_deletes=True,
                                 order_by="Subscription.id")

    def members_with(self, roles):
        """The users holding one of ``roles``, oldest member first."""
        return db.session.scalars(select(User).join(Membership, Membership.user_id == User.id).where(
            Membership.organization_id == self.id, Membership.role.in_(roles))
            .order_by(Membership.joined_at, User.id)).all()

    @property
    def label(self):
        return f"{self.id} ({self.name})"

    @property
    def stripe_email(self):
        # Stripe holds a copy, moved when the owner's address moves (``customers_mailing_owner``) or
        # the owner changes (``organizations.service.transfer``).
        if self.billing_email:
            return self.billing_email
        owners = self.members_with([OWNER])
        return owners[0].email if owners else None

    @property
    def stripe_name(self):
        return self.name

    def recipients(self):
        return self.members_with(MANAGERS)

    def notification_data(self):
        return {"organization": {"id": self.id, "name": self.name}}

    def redeemer_keys(self):
        """Its id, hashed as addresses are (ids are never reused, so the records outlive it)."""
        return [address_sha256(f"organization:{self.id}")]

    def member_count(self):
        """Its members (owner included) as stored now."""
        return db.session.scalar(select(func.count()).select_from(Membership)
                                 .where(Membership.organization_id == self.id))

    def __repr__(self):
        return f"<Organization {self.id} {self.name!r}>"


def _mailing_owner(user, *columns):
    return (select(*columns).join(Membership, Membership.organization_id == Organization.id)
            .where(Membership.user_id == user.id, Membership.role == OWNER, Organization.provider_id.is_not(None),
                   Organization.billing_email.is_(None))
            .order_by(Organization.id))


def ids_mailing_owner(user):
    """Return the ids of the organisations ``customers_mailing_owner`` would return, unlocked (a check that
    calls nothing)."""
    return db.session.scalars(_mailing_owner(user, Organization.id)).all()


def customers_mailing_owner(user):
    """Return the organisations ``user`` owns whose Stripe customer's ``email`` is the owner's address
    (``stripe_email``: a customer and no ``billing_email``), by id, each locked (``Billable.lock``).

    Read again once locked, until no new one appears: a transfer or a billing email committed
    meanwhile has moved one in or out. As many as the user owns: an email change refuses more than it
    moves at once (``app.auth.recovery``).
    """
    query = _mailing_owner(user, Organization).execution_options(populate_existing=True)
    locked = set()
    while True:
        found = db.session.scalars(query).all()
        fresh = [organization for organization in found if organization.id not in locked]
        if not fresh:
            return found
        for organization in fresh:
            organization.lock()
            locked.add(organization.id)


class Membership(db.Model):
    """A user's place in an organisation: ``role`` is ``owner`` (exactly one), ``admin`` or ``member``."""

    __tablename__ = "organization_members"

    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"),
                                                 primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True, index=True)
    role: Mapped[str] = mapped_column(String(16))
    joined_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)

    user = relationship("User")
    organization = relationship("Organization")


class Invitation(db.Model):
    """A pending invitation. Its link's token is signed, never stored (``organizations.invitations``):
    deleting the row (revoked, accepted) kills the link."""

    __tablename__ = "organization_invitations"
    __table_args__ = (UniqueConstraint("organization_id", "email"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=_opaque("inv"))
    organization_id: Mapped[str] = mapped_column(ForeignKey("organizations.id", ondelete="CASCADE"), index=True)
    email: Mapped[str] = mapped_column(String(320))
    role: Mapped[str] = mapped_column(String(16))
    invited_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)

    organization = relationship("Organization")
