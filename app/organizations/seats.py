"""Seats follow members (CONTRACT "Organisations"): an organisation's subscription quantity is its member
count, set here and nowhere else, provider-first.

Every change takes the organisation's lock, counts its members as they will be after the change, and
sends that count to Stripe as the item's absolute ``quantity`` before the membership row changes:
whatever the interleaving of accepts and removals, the last writer sends the true count, so Stripe's
quantity converges on the members. A seat added is charged at once (``always_invoice`` with
``pending_if_incomplete``, https://docs.stripe.com/billing/subscriptions/pending-updates): declined,
Stripe keeps the old quantity and this raises ``SeatDeclined`` (402) before anyone is added; a seat
removed follows ``PROVIDER_PRORATION``. Without a live subscription nothing is sent: members join
freely, and a new subscription starts at the member count; but while one is being started (its first
payment or Checkout open) nobody joins (``refuse_while_first_payment_open``). Nothing here commits.
"""
from flask import current_app

from app.billing import objects, prices
from app.billing.provider import get_provider
from app.idempotency import provider_key
from app.subscription import current
from app.subscription.errors import PaymentPending, PaymentRequired


class SeatDeclined(PaymentRequired):
    """402 ``payment_required`` to the invitee: the new seat's charge was not paid. No invoice details:
    those go to the owner and admins (``payment_failed``, from Stripe's ``invoice.payment_failed``)."""

    message = ("The organisation's payment for a new seat was declined, so you were not added; the invitation "
               "stays valid. Its owner and admins have been told.")


def member_count(organization):
    """The number of members (owner included) as stored now."""
    return organization.seat_count()


def seat_subscription(organization):
    """The subscription whose quantity is the seats: the live one (``current.live_subscription``), or ``None``."""
    return current.live_subscription(organization.subscriptions)


def _refuse_while_pending(organization, subscription):
    """``current.refuse_while_pending`` without the invoice's details: the invitee is not the one to pay it."""
    try:
        current.refuse_while_pending(organization, subscription)
    except PaymentPending:
        raise PaymentPending("An earlier seat change of the organisation waits for its invoice to be paid; its owner "
                             "and admins have been told. Accept the invitation again once it is paid.") from None


# A subscription that has not started: its first payment (an intent's) or its card (a paused trial) is
# still to come, and Stripe will charge it at the quantity it has, not at the members who joined since.
NOT_STARTED_STATUSES = frozenset({"incomplete", "paused"})


class FirstPaymentOpen(PaymentPending):
    """409 ``payment_pending`` to the invitee: the organisation's subscription is still being paid."""

    message = ("The organisation's subscription is waiting for its first payment (an open Checkout, a payment or a "
               "card to add), which covers the seats it was started with; accept the invitation again once it is "
               "paid, or abandoned. The invitation stays valid.")


def refuse_while_first_payment_open(organization):
    """Raise ``FirstPaymentOpen`` (409) while the organisation's subscription is being started: an intent's
    subscription ``incomplete``, a trial ``paused`` for its card, or a Checkout Session still ``open``.

    Stripe starts each at the quantity it was created with (the members then), so a member accepted
    meanwhile would have no paid seat: ``set_seats`` has no live subscription to raise yet. With a
    customer and no live subscription here, the customer's unended subscriptions are read first and
    written as the webhooks would (a subscription whose payment cleared, or whose Checkout completed,
    before its webhook arrived is live, and ``set_seats`` charges for it); then Stripe is asked for an
    open session. Two calls, only for an organisation without a live subscription: one page of its
    unended subscriptions (``list_unended_subscriptions``), never its whole history (CONTRACT "Changes to
    the fourth round": bounded Stripe work), and one page of one session. Under the organisation's lock
    (the caller takes it). Raises ``ProviderUnavailable`` (503).
    """
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


def set_seats(organization, count, reason):
    """Make Stripe's quantity of the organisation's live subscription ``count``; return the row, or ``None``.

    Under the organisation's lock (the caller takes it, before counting). ``reason`` names the change
    in Stripe's idempotency key (``"accept"``, ``"remove"``). More seats: charged now, ``SeatDeclined``
    (402) when Stripe holds the change pending; a pending seat change from before (an earlier
    decline) is ``PaymentPending`` (409) until it is paid or expires. Fewer seats: ``PROVIDER_PRORATION``.
    Raises ``ProviderUnavailable`` (503) and ``ProviderRejected`` (502): then nothing changed here
    either. Drifted seats are set back by ``flask reconcile`` (``billing.reconcile.reconcile_seats``).
    """
    subscription = seat_subscription(organization)
    # The seats are the licensed item's: a plan's metered items (no quantity) ride along uncounted.
    licensed = subscription.licensed_items if subscription is not None else []
    if len(licensed) != 1:
        return None
    item, provider = licensed[0], get_provider()
    if item.quantity == count:
        return subscription
    raising = count > (item.quantity or 0)
    if raising:
        _refuse_while_pending(organization, subscription)
    params = {"items": [{"id": item.provider_id, "quantity": count}]}
    if raising:
        params.update(proration_behavior=prices.INVOICE_AT_ONCE, payment_behavior="pending_if_incomplete")
    else:
        params["proration_behavior"] = current_app.config["PROVIDER_PRORATION"]
    live = provider.update_subscription(subscription.provider_id, params,
                                        provider_key(organization, f"seats-{reason}-{count}"))
    row = current.write(organization, live)
    if raising and objects.pending_update_of(live) is not None:
        raise SeatDeclined()
    return row

