"""Seats follow members (CONTRACT "Organisations", "Changes to the fifth round"): an organisation's
subscription quantity is its members plus the seats held for invitees, set here and nowhere else,
provider-first.

Every change takes the organisation's lock, counts the seats as they will be after the change, and
sends that count to Stripe as the item's absolute ``quantity`` before the membership row changes, and
records it with Stripe's answer (``SeatChange``). A seat added is charged at once (``always_invoice``
with ``pending_if_incomplete``, https://docs.stripe.com/billing/subscriptions/pending-updates):
declined, Stripe keeps the old quantity and the change in its ``pending_update``; the seat is then held
for the invitee, who is admitted by the webhook that says its invoice was paid (``admit``), and the hold
ends when Stripe drops the update unpaid (``expire``). Every other seat change waits meanwhile (409), so
the quantity the pending update applies is never above what was paid for. A seat removed follows
``PROVIDER_PRORATION``; in dunning it is not credited, and none is added (409). Without a live
subscription nothing is sent: members join freely, and a new subscription starts at the member count;
but while one is being started (its first payment or Checkout open) nobody joins
(``refuse_while_first_payment_open``). Nothing here commits.
"""
from flask import current_app
from sqlalchemy import delete, select

from app import timeutil
from app.billing import objects, prices
from app.billing.provider import get_provider
from app.billing.seats import seat_count
from app.billing.statuses import DUNNING_STATUSES
from app.extensions import db
from app.idempotency import provider_key
from app.models import Invitation, Membership, User
from app.models.organization import MANAGERS
from app.models.seat import ADMITTED, APPLIED, EXPIRED, HELD, SeatChange, held_on
from app.notifications import notify_account, notify_membership
from app.organizations.errors import FirstPaymentOpen, SeatChangePending, SeatDeclined, SeatsPastDue
from app.subscription import current, schedules
from app.timeutil import utcnow


def seat_subscription(organization):
    """The subscription whose quantity is the seats: the live one (``current.live_subscription``), or ``None``."""
    return current.live_subscription(organization.subscriptions)


# A subscription that has not started: its first payment (an intent's) or its card (a paused trial) is
# still to come, and Stripe will charge it at the quantity it has, not at the members who joined since.
NOT_STARTED_STATUSES = frozenset({"incomplete", "paused"})


def refuse_while_first_payment_open(organization):
    """Raise ``FirstPaymentOpen`` (409) while the organisation's subscription is being started: an intent's
    subscription ``incomplete``, a trial ``paused`` for its card, or a Checkout Session still ``open``.

    Stripe starts each at the quantity it was created with (the members then), so a member accepted
    meanwhile would have no paid seat: ``change_seats`` has no live subscription to raise yet. With a
    customer and no live subscription here, the customer's unended subscriptions are read first and
    written as the webhooks would (a subscription whose payment cleared, or whose Checkout completed,
    before its webhook arrived is live, and ``change_seats`` charges for it); then Stripe is asked for an
    open session. Two calls, only for an organisation without a live subscription: one page of its
    unended subscriptions (``list_unended_subscriptions``), never its whole history (CONTRACT "Changes to
    the fourth round": bounded Stripe work), and one page of one session. Under the organisation's lock
    (the caller takes it). Raises ``ProviderUnavailable`` (503).
    """
    # Read again under the lock: a Checkout opened meanwhile made the customer after this row was loaded.
    db.session.refresh(organization)
    if organization.provider_id is None or seat_subscription(organization) is not None:
        return
    provider = get_provider()
    unended = provider.list_unended_subscriptions(organization.provider_id)
    for live in unended:
        current.write(organization, live)
    if seat_subscription(organization) is not None:
        return
    # Stripe's statuses as just read: a row stored ``incomplete`` that Stripe has since cancelled (not
    # listed) holds nobody back, its webhook still to come.
    if (any(live.get("status") in NOT_STARTED_STATUSES for live in unended)
            or provider.list_checkout_sessions(organization.provider_id, 1, status="open")):
        raise FirstPaymentOpen()


def _refuse_while_pending(organization, subscription):
    """Raise ``SeatChangePending`` (409) while a seat change of the organisation waits for its invoice.

    CONTRACT "Changes to the fifth round": a removal, a leave or another accept during a pending seat
    change waits, so that Stripe's quantity after the pending change applies (its absolute quantity,
    https://docs.stripe.com/billing/subscriptions/pending-updates-reference) or expires equals the members
    plus the held seats. The row and the held seat say so from Stripe's answers; Stripe is asked once more
    (one call) before refusing, since the invoice may have been paid, or the update expired, a moment
    ago: what it says settles the held seat (``settle_held``).
    """
    held = held_seat(organization)
    if held is None and (subscription.pending_expires_at is None or subscription.pending_expires_at <= utcnow()):
        return
    live = get_provider().retrieve_subscription(subscription.provider_id)
    current.write(organization, live)
    if objects.pending_update_of(live) is not None:
        raise SeatChangePending()
    if held is not None and held.status == HELD:  # not ended with the subscription, as Stripe just said
        settle_held(held, live)


def held_seat(organization):
    """The organisation's seat held for an invitee while its charge waits for payment, or ``None``: at most
    one, since every other seat change waits for it (``_refuse_while_pending``). Only a hold on the live
    subscription is one: a hold on a subscription Stripe ended ended with it, written so by the webhook or the
    sync that brought the end (``app.billing.writer.end_seat_holds``)."""
    subscription = seat_subscription(organization)
    if subscription is None:
        return None
    return db.session.scalars(held_on(organization.id, [subscription.provider_id])).first()


def change_seats(organization, delta, reason, invitation=None, user=None):
    """Change the organisation's seats by ``delta`` (+1 an accept, -1 a removal); return the subscription row,
    or ``None`` without a live single-price subscription (members then join and leave freely).

    Under the organisation's lock (the caller takes it, before counting). The quantity sent to Stripe is
    absolute: the members plus the held seats, plus ``delta``. More seats: charged now (``always_invoice``,
    ``pending_if_incomplete``); declined, the seat is held for ``user`` (the invitee, with ``invitation``'s
    role) until its invoice is paid or Stripe's pending update expires, and ``SeatDeclined`` (402) is
    raised: the caller commits the record. Fewer seats: ``PROVIDER_PRORATION``. While a seat change
    waits for payment, any change is ``SeatChangePending`` (409). Every change sent is recorded as a
    ``SeatChange`` with Stripe's answer. In dunning (``past_due``, ``unpaid``) no seat is added (``SeatsPastDue``,
    409) and a seat removed is not credited. A seat held for ``user`` that Stripe says was paid admits them
    here (``_refuse_while_pending``); nothing more is charged then. Raises ``ProviderUnavailable`` (503) and
    ``ProviderRejected`` (502): then nothing changed here either. ``reason`` names the change in Stripe's
    idempotency key.
    """
    subscription = seat_subscription(organization)
    item = subscription.seat_item if subscription is not None else None
    if item is None:
        return None
    _refuse_while_pending(organization, subscription)
    if user is not None and db.session.get(Membership, (organization.id, user.id)) is not None:
        return subscription  # their own held seat, paid a moment ago: settled just now, it admitted them
    provider = get_provider()
    count = seat_count(organization) + delta
    if item.quantity == count:
        return subscription
    raising, dunning = count > (item.quantity or 0), subscription.provider_status in DUNNING_STATUSES
    if raising and dunning:
        raise SeatsPastDue.for_status(subscription.provider_status)
    params = {"items": [{"id": item.provider_id, "quantity": count}]}
    if raising:
        params.update(proration_behavior=prices.INVOICE_AT_ONCE, payment_behavior="pending_if_incomplete")
    else:  # in dunning the period was never paid for: its unused time is no credit to give (``cancel_now_terms``)
        params["proration_behavior"] = "none" if dunning else current_app.config["PROVIDER_PRORATION"]
    previous = item.quantity or 0
    live = provider.update_subscription(subscription.provider_id, params,
                                        provider_key(organization, f"seats-{reason}-{previous}-{count}"))
    row = current.write(organization, live)
    pending = objects.pending_update_of(live) if raising else None
    change = SeatChange(organization_id=organization.id, provider_subscription=subscription.provider_id,
                        reason=reason, previous_quantity=previous, quantity=count,
                        status=APPLIED if pending is None else HELD, invoice=_invoice_id(live))
    db.session.add(change)
    if pending is not None:
        change.user_id, change.role = user.id, invitation.role
        change.invitation_id = invitation.id
        change.expires_at = timeutil.from_timestamp(pending["expires_at"])
        raise SeatDeclined()
    # Seats follow members across a plan change scheduled for the period's end (CONTRACT "Plan changes at the
    # period's end"): every phase of the service's schedule takes the new quantity.
    schedules.follow_seats(organization, row, count)
    return row


def _invoice_id(live):
    return objects.ref_id(live.get("latest_invoice")) if live.get("latest_invoice") else None


def settle_held(held, live):
    """Settle the held seat ``held`` from Stripe's subscription ``live`` once it has no pending update: its
    invoice paid (the quantity applied), the invitee is admitted (``admit``); else the hold ends
    (``expire``). Return whether it was paid and admitted nobody (``admit``: the seat is then
    ``give_back``'s). Under the organisation's lock."""
    invoice = live.get("latest_invoice")
    paid = (invoice.get("status") == "paid" if isinstance(invoice, dict) and invoice.get("id") == held.invoice
            else any(item.get("quantity") == held.quantity
                    for item in objects.items_of(live) if not objects.is_metered(item)))
    if paid:
        return not admit(held)
    expire(held)
    return False


def admit(held):
    """The held seat's invoice was paid: the invitee joins with the role they accepted, the invitation is
    used, and they (``invitation_accepted``) and the owner and admins (``member_joined``) are told; return
    whether they joined. CONTRACT "Changes to the fifth round". Under the organisation's lock; nothing commits."""
    held.status, held.resolved_at = ADMITTED, utcnow()
    organization, user = held.organization, db.session.get(User, held.user_id)
    if user is None or db.session.get(Membership, (organization.id, user.id)) is not None:
        return False
    # The invitation carries its sender's authority until the seat is paid: revoked meanwhile, or its sender
    # no longer a manager, it admits nobody (the paid seat is then ``give_back``'s).
    invitation = db.session.get(Invitation, held.invitation_id) if held.invitation_id else None
    sender = (db.session.get(Membership, (organization.id, invitation.invited_by))
              if invitation is not None and invitation.invited_by else None)
    if sender is None or sender.role not in MANAGERS:
        return False
    db.session.add(Membership(organization_id=organization.id, user_id=user.id, role=held.role))
    db.session.execute(delete(Invitation).where(Invitation.id == held.invitation_id))
    row = seat_subscription(organization)
    if row is not None:
        schedules.follow_seats(organization, row, held.quantity)
    notify_membership(organization, "member_joined", user, {"role": held.role})
    notify_account(user, "invitation_accepted", {"organization": {"id": organization.id, "name": organization.name},
                                                 "role": held.role})
    return True


def give_back(organization, unread=None, reason="unclaimed"):
    """Seats were paid that nobody takes: Stripe's quantity goes back to the seats taken at once, prorated as a
    removal (``change_seats``: ``PROVIDER_PRORATION``, none in dunning), not by ``flask reconcile`` without credit.
    ``unclaimed``: a held seat paid with its invitee or invitation gone; ``started``/``resumed``: the subscription
    billed from the quantity it was opened with, after members left meanwhile (only accepts wait for the first
    payment). ``unread``: the subscription's id, when not written as Stripe has it (``invoice.paid`` writes none)."""
    if unread is not None:
        current.write(organization, get_provider().retrieve_subscription(unread))
    subscription = seat_subscription(organization)
    item = subscription.seat_item if subscription is not None else None
    # Only lowered: members above the seats billed (a subscription made elsewhere) are reconcile's drift.
    if item is not None and (item.quantity or 0) > seat_count(organization):
        change_seats(organization, 0, reason)


def give_back_after_start(organization, invoice):
    """The first invoice (``subscription_create``) was paid: seats it billed for members who left while it was open
    are given back (``give_back``); no Stripe call unless it billed more than are taken, or lines are missing."""
    lines = invoice.get("lines") or {}
    billed = max((line.get("quantity") or 0 for line in objects.list_data(lines)), default=None)
    if billed is None or lines.get("has_more") or billed > seat_count(organization):
        give_back(organization, objects.subscription_id_of_invoice(invoice), "started")


def void_ended_hold(organization, live):
    """Stripe ended the subscription ``live`` (its ``customer.subscription.deleted`` event's dict) while a seat on it
    was held: the hold ended with it (``app.billing.writer.end_seat_holds``), but cancelling leaves its invoice open
    (https://docs.stripe.com/billing/subscriptions/cancel), payable for a seat nobody can take. The invoice of the
    subscription's last hold, held or ended unpaid, is voided, whatever ``latest_invoice`` is now (a final invoice
    moves it). At most one call; ``ProviderUnavailable`` (503, Stripe retries) and ``ProviderRejected`` (502)."""
    last = db.session.scalars(select(SeatChange).where(
        SeatChange.organization_id == organization.id, SeatChange.provider_subscription == live["id"],
        SeatChange.status.in_((HELD, EXPIRED, ADMITTED))).order_by(SeatChange.id.desc()).limit(1)).first()
    if last is not None and last.status != ADMITTED and last.invoice:
        get_provider().void_invoice(last.invoice)


def expire(held):
    """The held seat's pending update expired unpaid: the hold ends, the invitation stays valid."""
    held.status, held.resolved_at = EXPIRED, utcnow()
