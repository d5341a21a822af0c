"""How users, subscriptions and invoices are shown (CONTRACT "Resources as JSON"), for every blueprint that shows them.

``auth`` (``/auth/me``, register) and ``subscription`` both import from here, so neither reaches into
the other's package for the shape of a resource. Plans come from ``app.billing.plans``.
"""
from flask import current_app
from marshmallow import Schema, fields
from sqlalchemy import bindparam, select

from app.billing import plans, statuses
from app.db_session import autocommit_engine
from app.fields import Timestamp
from app.models.organization import Membership, Organization
from app.timeutil import from_timestamp, utcnow


class PendingUpdateSchema(Schema):
    """Stripe's ``pending_update``: a change that applies once its invoice is paid."""

    price = fields.String(allow_none=True, required=True, metadata={"description": "The price waiting for payment"})
    quantity = fields.Integer(allow_none=True, required=True, metadata={"description": "The seats waiting for payment"})
    expires_at = fields.Integer(allow_none=True, required=True,
                                metadata={"description": "Unix seconds; unpaid by then, the change is dropped"})


class CouponSchema(Schema):
    id = fields.String(required=True)
    percent_off = fields.Float(allow_none=True, required=True)
    amount_off = fields.Integer(allow_none=True, required=True, metadata={"description": "Minor units of currency"})
    currency = fields.String(allow_none=True, required=True)
    duration = fields.String(allow_none=True, required=True, metadata={"description": "once, repeating or forever"})
    duration_in_months = fields.Integer(allow_none=True, required=True)


class DiscountSchema(Schema):
    """Stripe's discount of the subscription (its first), as Stripe has it."""

    coupon = fields.Nested(CouponSchema, required=True)
    promotion_code = fields.String(allow_none=True, required=True, metadata={"description": "Provider id (promo_...)"})
    end = fields.Integer(allow_none=True, required=True,
                         metadata={"description": "Unix seconds a repeating discount ends; null otherwise"})


class ScheduledChangeSchema(Schema):
    """The plan change Stripe's subscription schedule makes when the period ends (CONTRACT "Plan changes at the
    period's end")."""

    price = fields.String(required=True, metadata={"description": "The price from then on"})
    plan = fields.String(allow_none=True, required=True)
    quantity = fields.Integer(allow_none=True, required=True, metadata={"description": "Seats from then on"})
    at = Timestamp(required=True, metadata={"description": "When it applies: the current period's end"})


class SubscriptionSchema(Schema):
    id = fields.String(required=True, metadata={"description": "Provider subscription id"})
    status = fields.String(required=True, metadata={"description": "Provider status, e.g. active"})
    price = fields.String(allow_none=True, required=True)
    plan = fields.String(allow_none=True, required=True)
    cancel_at_period_end = fields.Boolean(required=True)
    current_period_end = Timestamp(allow_none=True, required=True)
    ends_at = Timestamp(allow_none=True, required=True)
    on_grace_period = fields.Boolean(required=True)
    quantity = fields.Integer(allow_none=True, required=True, metadata={"description": "Seats"})
    trial_end = Timestamp(allow_none=True, required=True)
    pending_update = fields.Nested(PendingUpdateSchema, allow_none=True, required=True, metadata={
        "description": "A price or seat change waiting for its invoice to be paid; price and seat changes are "
                       "409 payment_pending until it is paid or expires"})
    discount = fields.Nested(DiscountSchema, allow_none=True, required=True)
    scheduled_change = fields.Nested(ScheduledChangeSchema, allow_none=True, required=True, metadata={
        "description": "A plan change Stripe will make at the period's end (POST /subscription/swap with "
                       "at=period_end; withdrawn with DELETE /subscription/scheduled-change); a swap now is 409 "
                       "change_scheduled meanwhile"})


class InvoiceSchema(Schema):
    """CONTRACT "Invoice": Stripe's invoice, money in minor units of ``currency`` as Stripe computed it."""

    id = fields.String(allow_none=True, required=True, metadata={"description": "Provider invoice id"})
    number = fields.String(allow_none=True, required=True, metadata={"description": "Null until finalized"})
    status = fields.String(allow_none=True, required=True,
                           metadata={"description": "Provider status: draft, open, paid, uncollectible or void"})
    amount_due = fields.Integer(required=True, metadata={"description": "Minor units of currency"})
    amount_paid = fields.Integer(required=True, metadata={"description": "Minor units of currency"})
    currency = fields.String(required=True, metadata={"description": "ISO 4217, lower case (Stripe's)"})
    created = Timestamp(allow_none=True, required=True)
    period_start = Timestamp(allow_none=True, required=True)
    period_end = Timestamp(allow_none=True, required=True)
    hosted_invoice_url = fields.String(allow_none=True, required=True,
                                       metadata={"description": "Stripe's page where the invoice is seen and paid"})
    invoice_pdf = fields.String(allow_none=True, required=True)
    subtotal = fields.Integer(allow_none=True, required=True, metadata={
        "description": "Minor units, discounted, untaxed (Stripe's total_excluding_tax); total = subtotal + tax"})
    tax = fields.Integer(required=True, metadata={"description": "Minor units: the tax Stripe computed (0 without)"})
    total = fields.Integer(allow_none=True, required=True, metadata={"description": "Minor units: Stripe's total"})


class CardSchema(Schema):
    brand = fields.String(required=True)
    last4 = fields.String(required=True)


class UserOrganizationSchema(Schema):
    id = fields.String(required=True)
    name = fields.String(required=True)
    role = fields.String(required=True, metadata={"description": "owner, admin or member"})
    plan = fields.String(required=True, metadata={"description": "The organisation's entitled plan"})


class UserSchema(Schema):
    id = fields.Integer(required=True)
    email = fields.String(required=True)
    email_verified_at = Timestamp(allow_none=True, required=True,
                                  metadata={"description": "When the address was verified; null until then"})
    name = fields.String(allow_none=True, required=True)
    plan = fields.String(required=True, metadata={"description": "Entitled plan at the time of the request"})
    card = fields.Nested(CardSchema, allow_none=True, required=True)
    subscription = fields.Nested(SubscriptionSchema, allow_none=True, required=True)
    organizations = fields.List(fields.Nested(UserOrganizationSchema), required=True,
                                metadata={"description": "The user's organisations; plan stays the user's own"})


def present_subscription(subscription, now=None):
    """Return the CONTRACT "Subscription" resource as a dict for ``SubscriptionSchema``, or ``None``."""
    if subscription is None:
        return None
    now = now or utcnow()
    return {
        "id": subscription.provider_id,
        "status": subscription.provider_status,
        "price": subscription.provider_price,
        "plan": plans.plan_for_price(subscription.provider_price) if subscription.provider_price else None,
        "cancel_at_period_end": subscription.cancel_at_period_end,
        "current_period_end": subscription.current_period_end,
        "ends_at": subscription.ends_at,
        "on_grace_period": statuses.on_grace_period(subscription, now),
        "quantity": subscription.quantity,
        "trial_end": subscription.trial_ends_at,
        "pending_update": _pending_update(subscription, now),
        "discount": _discount(subscription.discount),
        "scheduled_change": present_scheduled_change(subscription),
    }


def present_scheduled_change(subscription):
    """``{"price", "plan", "quantity", "at"}`` of the change the subscription's Stripe schedule makes at a phase's
    start, as last read from Stripe (``app.billing.schedules``), or ``None``."""
    stored = subscription.scheduled_change
    if not stored or not stored.get("price"):
        return None
    return {"price": stored["price"], "plan": plans.plan_for_price(stored["price"]), "quantity": stored.get("quantity"),
            "at": from_timestamp(stored.get("at"))}


def _discount(stored):
    return {name: stored.get(name) for name in ("coupon", "promotion_code", "end")} if stored else None


def _pending_update(subscription, now):
    expires_at = subscription.pending_expires_at
    if expires_at is None or expires_at <= now:
        return None
    return {"price": subscription.pending_price, "quantity": subscription.pending_quantity,
            "expires_at": int(expires_at.timestamp())}


def present_invoice(invoice):
    """Return the CONTRACT "Invoice" resource of a Stripe invoice (a dict, Unix times) for ``InvoiceSchema``."""
    return {
        "id": invoice.get("id"), "number": invoice.get("number"), "status": invoice.get("status"),
        "amount_due": invoice.get("amount_due"), "amount_paid": invoice.get("amount_paid"),
        "currency": invoice.get("currency"), "created": from_timestamp(invoice.get("created")),
        "period_start": from_timestamp(invoice.get("period_start")),
        "period_end": from_timestamp(invoice.get("period_end")),
        "hosted_invoice_url": invoice.get("hosted_invoice_url"), "invoice_pdf": invoice.get("invoice_pdf"),
        **totals_of(invoice),
    }


def totals_of(invoice):
    """``{"subtotal", "tax", "total"}`` of a Stripe invoice (or preview), minor units, as Stripe computed them.

    ``subtotal`` is what tax was computed on: Stripe's ``total_excluding_tax`` (after discounts; its
    own ``subtotal`` is before them), so that ``total`` is always ``subtotal + tax``. ``tax`` is
    Stripe's ``total_taxes`` amounts (what Stripe Tax charged), 0 when it charged none.
    """
    taxes = [entry.get("amount") for entry in invoice.get("total_taxes") or () if isinstance(entry, dict)]
    taxed = invoice.get("total_excluding_tax")
    return {"subtotal": taxed if taxed is not None else invoice.get("subtotal"),
            "tax": sum(amount for amount in taxes if isinstance(amount, int)), "total": invoice.get("total")}


def present_user(user):
    """Return the CONTRACT "User" resource of ``user`` as a dict for ``UserSchema``.

    ``plan`` is the plan entitled at this moment (UTC now), not the stored ``users.plan``.
    """
    now = utcnow()
    return {
        "id": user.id,
        "email": user.email,
        "email_verified_at": user.email_verified_at,
        "name": user.name,
        "plan": plans.entitled_plan(user, now),
        "card": present_card(user),
        "subscription": present_subscription(plans.current_subscription(user, now), now),
        "organizations": organizations_of(user),
    }


# The user's organisations with their role and stored plan, oldest membership first: one Core SELECT on
# the reads engine, as the bearer lookup reads (no session, no transaction on a GET).
_ORGANIZATIONS_OF = (
    select(Organization.__table__.c.id, Organization.__table__.c.name, Membership.__table__.c.role,
           Organization.__table__.c.plan)
    .join(Membership.__table__, Membership.__table__.c.organization_id == Organization.__table__.c.id)
    .where(Membership.__table__.c.user_id == bindparam("user_id"))
    .order_by(Membership.__table__.c.joined_at, Organization.__table__.c.id)
)


def organizations_of(user):
    """``[{"id", "name", "role", "plan"}]`` of the user's organisations; ``plan`` is the organisation's
    stored plan (``plans.recompute_plan`` on every webhook), ``FREE_PLAN`` without one."""
    if getattr(user, "has_organizations", True) is False:  # the bearer's snapshot knows it is in none
        return []
    free = current_app.config["FREE_PLAN"]
    with autocommit_engine().connect() as connection:
        rows = connection.execute(_ORGANIZATIONS_OF, {"user_id": user.id}).all()
    return [{"id": row.id, "name": row.name, "role": row.role, "plan": row.plan or free} for row in rows]


def present_subscription_state(user):
    """Return ``GET /subscription``'s ``{"plan", "subscription"}`` for ``user`` at this moment."""
    now = utcnow()
    return {"plan": plans.entitled_plan(user, now),
            "subscription": present_subscription(plans.current_subscription(user, now), now)}


def present_card(billable):
    """``{"brand", "last4"}`` of the billable's stored card, or ``None``."""
    if billable.pm_type and billable.pm_last_four:
        return {"brand": billable.pm_type, "last4": billable.pm_last_four}
    return None
