"""Support overrides of a billable's features (CONTRACT "Entitlements", "Overrides"), and pruning the ledger's
identifiers. Nothing here commits: the CLI does. A grant or revoke that changes the billable's features queues
``entitlements.updated`` (``updates.announce``), and so does an override's ``until`` passing, once
``flask entitlements announce-expired`` (every minute, from cron) finds it."""
from datetime import timedelta

from sqlalchemy import delete, select

from app.entitlements import service
from app.entitlements.features import catalog
from app.entitlements.updates import announce
from app.extensions import db
from app.models.entitlement import HELD, EntitlementConsume, EntitlementOverride, EntitlementReservation
from app.timeutil import utcnow


def grant(billable, feature, limit, enabled, until, reason, by):
    """Override ``feature`` for ``billable``: ``limit`` (a quota) or ``enabled`` (a boolean), until ``until``
    (aware UTC or ``None``); return the ``EntitlementOverride``. Raises ``ValueError`` saying what is wrong."""
    spec = catalog().get(feature)
    if spec is None:
        raise ValueError(f"no plan of PLAN_FEATURES has the feature {feature!r}")
    if (spec["type"] == "quota") != (limit is not None) or (limit is None) == (enabled is None):
        raise ValueError(f"{feature!r} is a {spec['type']}: give " + ("--limit N" if spec["type"] == "quota"
                                                                       else "--enabled true|false"))
    if until is not None and until <= utcnow():
        raise ValueError("--until must be in the future")
    if not reason.strip():
        raise ValueError("--reason must say why")
    # The lock a webhook takes: its features and this grant's are then announced one after the other, each
    # event showing both, rather than two events that each miss the other's change.
    billable.lock()
    override = EntitlementOverride(billable=billable.billable_key, **billable.owner_columns(), feature=feature,
                                   limit=limit, enabled=enabled, until=until, reason=reason.strip()[:500],
                                   granted_by=by[:255], created_at=utcnow())
    db.session.add(override)
    db.session.flush()
    announce(billable)
    return override


def revoke(billable, feature, by):
    """End the unrevoked overrides of ``feature`` for ``billable``; return how many. Raises ``ValueError`` for none."""
    now = utcnow()
    billable.lock()  # as ``grant``
    rows = db.session.scalars(select(EntitlementOverride).where(
        EntitlementOverride.billable == billable.billable_key, EntitlementOverride.feature == feature,
        EntitlementOverride.revoked_at.is_(None))).all()
    if not rows:
        raise ValueError(f"{billable.billable_key} has no override of {feature!r} to revoke")
    for row in rows:
        row.revoked_at, row.revoked_by = now, by[:255]
    db.session.flush()
    announce(billable, now)
    return len(rows)


def expired_billables(now, limit=500):
    """The owners (``User`` or ``Organization``) of up to ``limit`` overrides whose ``until`` passed by ``now``
    (aware UTC) and was not yet announced, revoked ones left out (their revoke announced them)."""
    rows = db.session.scalars(select(EntitlementOverride).where(
        EntitlementOverride.until <= now, EntitlementOverride.revoked_at.is_(None),
        EntitlementOverride.expiry_announced_at.is_(None)).order_by(EntitlementOverride.until).limit(limit)).all()
    owners = {(row.user_id, row.organization_id) for row in rows}
    return [service.billable_of({"user": user_id} if user_id is not None else {"organization": organization_id})
            for user_id, organization_id in sorted(owners, key=str)]


def announce_expiry(billable, now):
    """Announce ``billable``'s features now that its overrides past ``until`` ended (``entitlements.updated``, sent
    only if its features changed: another override may still hold) and mark those overrides announced; return
    how many were."""
    billable.lock()  # as ``grant``: one event showing every change made under the lock
    rows = db.session.scalars(select(EntitlementOverride).where(
        EntitlementOverride.billable == billable.billable_key, EntitlementOverride.until <= now,
        EntitlementOverride.revoked_at.is_(None), EntitlementOverride.expiry_announced_at.is_(None))).all()
    for row in rows:
        row.expiry_announced_at = now
    db.session.flush()
    announce(billable, now)
    return len(rows)


def history(billable):
    """Every override of ``billable``, oldest first (revoked and expired ones too: who, when, why)."""
    return db.session.scalars(select(EntitlementOverride).where(
        EntitlementOverride.billable == billable.billable_key).order_by(EntitlementOverride.id)).all()


def prune(retention_days):
    """Delete consumes (their identifiers) and closed reservations older than ``retention_days``; return how many."""
    cutoff = utcnow() - timedelta(days=retention_days)
    consumes = db.session.execute(delete(EntitlementConsume).where(EntitlementConsume.created_at < cutoff)).rowcount
    reservations = db.session.execute(delete(EntitlementReservation).where(
        EntitlementReservation.status != HELD, EntitlementReservation.updated_at < cutoff)).rowcount
    return consumes + reservations
