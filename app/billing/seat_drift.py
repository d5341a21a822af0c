"""Seats that drifted from members (CONTRACT "Organisations", "Drift"): ``flask reconcile`` sets each
organisation's quantity at Stripe back to its member count.

Drift is a quantity changed where the service does not decide it (the billing portal, the Dashboard),
or a seat change whose local half was lost. The fix is ``proration_behavior=none``: drift is nobody's
purchase, so it is neither charged nor credited. Each organisation is synced first, under its lock, in
a transaction of its own; a dry run writes nothing, here or at Stripe.
"""
from dataclasses import dataclass

from sqlalchemy import select

from app.billing import plans, state
from app.billing.reconcile import DryRunProvider
from app.billing.statuses import LIVE_STATUSES
from app.extensions import db
from app.models import Organization


@dataclass(frozen=True)
class SeatDrift:
    """One organisation whose Stripe quantity (``paid``) was not its member count (``members``)."""

    organization_id: str
    name: str
    paid: int
    members: int

    def __str__(self):
        return f"{self.organization_id} ({self.name}): seats {self.paid} -> {self.members}"


def reconcile_seats(provider, dry_run=False):
    """Return ``(drifted, failures)``: a ``SeatDrift`` per organisation set back (or, in a dry run, that
    would be), and ``(organization id, exception)`` per one that could not be checked."""
    drifted, failures = [], []
    syncing = DryRunProvider(provider) if dry_run else provider
    ids = db.session.scalars(select(Organization.id).where(Organization.provider_id.is_not(None))
                             .order_by(Organization.id)).all()
    for organization_id in ids:
        try:
            found = _reconcile(syncing, db.session.get(Organization, organization_id), dry_run)
        except Exception as exc:  # one organisation's failure must not stop the others
            db.session.rollback()
            failures.append((organization_id, exc))
            continue
        if found is not None:
            drifted.append(found)
        if dry_run:
            db.session.rollback()
        else:
            db.session.commit()
    return drifted, failures


def _reconcile(provider, organization, dry_run):
    organization.lock()
    provider.sync(organization)
    subscription = plans.newest([s for s in organization.subscriptions if s.provider_status in LIVE_STATUSES])
    members = organization.seat_count()
    # The seats are the licensed item's: a plan's metered items (no quantity) are not seats.
    licensed = subscription.licensed_items if subscription is not None else []
    if len(licensed) != 1 or licensed[0].quantity == members:
        return None
    item = licensed[0]
    drift = SeatDrift(organization.id, organization.name, item.quantity, members)
    if not dry_run:
        live = provider.update_subscription(
            subscription.provider_id, {"items": [{"id": item.provider_id, "quantity": members}],
                                       "proration_behavior": "none"},
            f"seats-reconcile-{organization.idempotency_token}-{subscription.provider_id}-{drift.paid}-{members}")
        state.apply_subscription(organization, live, state.live_as_of())
        plans.recompute_plan(organization)
    return drift
