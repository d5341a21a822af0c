"""``AdmitSeats``: a seat held for an invitee is settled by the webhook that says what Stripe did with it.

CONTRACT "Changes to the fifth round": a declined seat holds its invitation; when that invoice is paid
(on Stripe's page, by a retry or a new card) the invitee is admitted by the webhook that says so, and
told; unpaid when Stripe's pending update expires, the hold ends and the invitation stays valid
(``app.organizations.seats``). ``invoice.paid`` names the invoice; ``pending_update_applied`` and
``pending_update_expired`` name it as the subscription's ``latest_invoice``
(https://docs.stripe.com/billing/subscriptions/pending-updates-reference). Each settles only the seat
held for that invoice, once: a redelivered or late event finds it settled; paid with nobody left to admit, the seat
is given back (``seats.give_back``). ``customer.subscription.deleted``
voids the invoice of a seat held on the subscription, which its writer ended (``seats.void_ended_hold``).
The first invoice's ``invoice.paid`` (``billing_reason`` ``subscription_create``) gives back the seats of members
who left while it was open: Stripe started the subscription at the quantity it was opened with; so does
``customer.subscription.resumed`` for members who left while a trial was paused for its card.
"""
from sqlalchemy import select

from app.billing import objects, state
from app.billing.events import ADMIT_SEATS, handled_by
from app.extensions import db
from app.models.seat import HELD, SeatChange
from app.organizations import seats
from app.signals import webhook_handled

EVENT_TYPES = handled_by(ADMIT_SEATS)
EXPIRED = "customer.subscription.pending_update_expired"
DELETED = "customer.subscription.deleted"
RESUMED = "customer.subscription.resumed"


@webhook_handled.connect
def admit_seats(sender, event, **extra):
    """Admit the invitee of the seat held for the event's invoice, or end the hold when Stripe dropped it; void an
    ended subscription's held invoice; give back the seats of members who left before the first invoice was paid or
    while a trial was paused (the module docstring).

    Returns ``True`` when the event is one of its types and names a known customer (the billable, locked
    by the webhook), as the other listeners do.
    """
    if event["type"] not in EVENT_TYPES:
        return False
    obj = event["data"]["object"]
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(obj))
    if billable is None:
        return False
    if billable.kind != "organization":  # only an organisation's seats are held or follow members
        return True
    if event["type"] == DELETED:
        seats.void_ended_hold(billable, obj)
        return True
    if obj.get("object") == "invoice" and obj.get("billing_reason") == "subscription_create":  # or its twin
        seats.give_back_after_start(billable, obj)
        return True
    if event["type"] == RESUMED:  # written by the event: Stripe's quantity is the row's
        seats.give_back(billable, reason="resumed")
        return True
    invoice = objects.ref_id(obj.get("id") if obj.get("object") == "invoice" else obj.get("latest_invoice"))
    held = db.session.scalars(select(SeatChange).where(
        SeatChange.organization_id == billable.id, SeatChange.status == HELD,
        SeatChange.invoice == invoice)).first() if invoice else None
    if held is None:
        return True
    if event["type"] == EXPIRED:
        seats.expire(held)
    elif not seats.admit(held):
        seats.give_back(billable, held.provider_subscription)
    return True
