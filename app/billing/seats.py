"""An organisation's seats (CONTRACT "Organisations"; "Changes to the fifth round"): how many its subscription
must have (``seat_count``: members plus seats held for invitations whose charge waits for payment), and seats
that drifted from that count, which ``flask reconcile`` sets back at Stripe ("Drift").

Drift is a quantity changed where the service does not decide it (the billing portal, the Dashboard),
or a seat change whose local half was lost. The fix is ``proration_behavior=none``: drift is nobody's
purchase, so it is neither charged nor credited. ``reconcile`` syncs the organisation first, under its
lock, in a transaction of its own; a dry run writes nothing, here or at Stripe.
"""
from dataclasses import dataclass

from sqlalchemy import func, select

from app.billing import plans, state
from app.billing.statuses import LIVE_STATUSES
from app.extensions import db
from app.models import Subscription
from app.models.seat import held_on


def seat_count(billable):
    """The quantity the billable's subscription must have (an int), or ``None`` when the client chooses (a
    user's own): an organisation's members plus the seats held for invitees while their charge waits for
    payment (seats follow members, ``app.organizations.seats``)."""
    if not billable.seated:
        return None
    # Held on a subscription still live: one cancelled meanwhile took its pending update with it.
    live = select(Subscription.provider_id).where(Subscription.organization_id == billable.id,
                                                  Subscription.provider_status.in_(LIVE_STATUSES))
    return billable.member_count() + db.session.scalar(
        select(func.count()).select_from(held_on(billable.id, live).subquery()))


@dataclass(frozen=True)
class SeatDrift:
    """One organisation whose Stripe quantity (``paid``) was not its seat count (``members``)."""

    organization_id: str
    name: str
    paid: int
    members: int

    def __str__(self):
        return f"{self.organization_id} ({self.name}): seats {self.paid} -> {self.members}"


def set_seats(provider, organization, dry_run=False):
    """Set the quantity of the organisation's live subscription at Stripe to its ``seat_count``,
    without proration; return the ``SeatDrift`` (set, or in a dry run only found), else ``None``.

    Runs after ``sync`` under the organisation's lock (``reconcile``), so the stored items are Stripe's.
    The caller commits. Raises ``ProviderUnavailable`` and ``ProviderRejected``.
    """
    subscription = plans.newest([s for s in organization.subscriptions if s.provider_status in LIVE_STATUSES])
    members = seat_count(organization)
    item = subscription.seat_item if subscription is not None else None
    if item is None or item.quantity == members or _seat_change_waits(organization, subscription):
        return None
    drift = SeatDrift(organization.id, organization.name, item.quantity, members)
    if not dry_run:
        live = provider.update_subscription(
            subscription.provider_id, {"items": [{"id": item.provider_id, "quantity": members}],
                                       "proration_behavior": "none"},
            f"seats-reconcile-{organization.idempotency_token}-{subscription.provider_id}-{drift.paid}-{members}")
        state.apply_subscription(organization, live, state.live_as_of())
        plans.recompute_plan(organization)
    return drift


def _seat_change_waits(organization, subscription):
    """Whether a seat change is not settled yet: Stripe holds a pending update (its absolute quantity applies
    when paid), or a seat held for an invitee waits for the webhook, or the next seat change, that settles it
    (``app.organizations.seats``). Setting the quantity meanwhile would give a seat nobody paid for, or take
    back one that was."""
    return subscription.pending_quantity is not None or \
        db.session.scalar(held_on(organization.id, [subscription.provider_id]).limit(1)) is not None

