"""The quota ledger: balances per billable, feature and period, changed only by single conditional UPDATEs.

Concurrent consumes and reservations never take more than the limit together: each is one
``UPDATE entitlement_balances SET used = used + :n WHERE id = :id AND used + reserved + :n <= :limit
RETURNING used, reserved``. On PostgreSQL a second UPDATE of the row waits for the first transaction
and evaluates its condition again on the row the first committed (READ COMMITTED's re-check); SQLite
has one writer at a time. Nothing here calls Stripe or commits: the caller (a view, the CLI) does.
"""
import secrets
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite

from app.extensions import db
from app.models.entitlement import EXPIRED, HELD, SETTLED, EntitlementBalance, EntitlementReservation

Balance, Reservation = EntitlementBalance, EntitlementReservation
NEVER = "never"


def period_of(spec, subscription, now):
    """Return the quota's period at ``now`` as ``(key, reset_at)`` (``reset_at`` aware UTC, ``None`` for never).

    ``reset: period``: the period of the entitled ``subscription`` ending at its ``current_period_end``,
    as Stripe last reported it (a renewal's webhook moves it); without one (the free plan), the
    calendar month, UTC (CONTRACT "Entitlements").
    """
    if spec["reset"] == NEVER:
        return NEVER, None
    if subscription is not None and subscription.current_period_end is not None:
        end = subscription.current_period_end
        return f"until:{int(end.timestamp())}", end
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return f"month:{start:%Y-%m}", (start + timedelta(days=32)).replace(day=1)


def owner_of(billable):
    """The owner columns of a ledger row: ``{"billable": "<kind>:<id>", "<kind>_id": id}``."""
    return {"billable": billable.billable_key, **billable.owner_columns()}


def find(owner, feature, period):
    """The balance of ``owner``'s ``feature`` in ``period``, or ``None`` (no consume yet)."""
    return db.session.execute(select(Balance.id, Balance.used, Balance.reserved).where(
        Balance.billable == owner["billable"], Balance.feature == feature, Balance.period == period)).first()


def ensure(owner, feature, period, reset_at, now):
    """Return the id of ``owner``'s balance of ``feature`` in ``period``, made at 0 when there is none."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    made = db.session.execute(dialect.insert(Balance).values(
        **owner, feature=feature, period=period, reset_at=reset_at, used=0, reserved=0, created_at=now,
        updated_at=now).on_conflict_do_nothing(index_elements=["billable", "feature", "period"])
        .returning(Balance.id)).scalar()
    return made if made is not None else find(owner, feature, period).id


def expire(balance_id, now):
    """Mark the balance's held reservations past ``expires_at`` expired and return their units to it."""
    amounts = db.session.execute(update(Reservation).where(
        Reservation.balance_id == balance_id, Reservation.status == HELD, Reservation.expires_at <= now)
        .values(status=EXPIRED, updated_at=now).returning(Reservation.amount)
        .execution_options(synchronize_session=False)).scalars().all()
    if amounts:
        _change(balance_id, now, reserved=-sum(amounts))


def unreturned(balance_id, now):
    """The units of the balance's reservations that expired and are not yet returned (a read, for ``GET``)."""
    # int(): PostgreSQL's sum of a bigint is a numeric (a Decimal).
    return int(db.session.scalar(select(func.coalesce(func.sum(Reservation.amount), 0)).where(
        Reservation.balance_id == balance_id, Reservation.status == HELD, Reservation.expires_at <= now)))


def _change(balance_id, now, limit=None, used=0, reserved=0):
    """Add ``used`` and ``reserved`` to the balance if the result fits ``limit`` (``None``: always); return
    ``(used, reserved)`` after, or ``None`` when it did not fit."""
    if limit is not None and used + reserved > limit:
        return None  # never fits; and ``used + :n`` past 2**63 would be an error on PostgreSQL, not a "no"
    statement = update(Balance).where(Balance.id == balance_id)
    if limit is not None:
        statement = statement.where(Balance.used + Balance.reserved + (used + reserved) <= limit)
    return db.session.execute(statement.values(
        used=Balance.used + used, reserved=Balance.reserved + reserved, updated_at=now)
        .returning(Balance.used, Balance.reserved).execution_options(synchronize_session=False)).first()


def consume(balance_id, amount, limit, now):
    """Take ``amount`` units if all fit ``limit`` (``None``: unlimited or overage); return ``(used, reserved)``
    after, or ``None`` having taken nothing."""
    expire(balance_id, now)
    return _change(balance_id, now, limit, used=amount)


def reserve(owner, feature, balance_id, amount, limit, identifier, ttl, now):
    """Hold ``amount`` units for ``ttl`` seconds if they fit; return the ``Reservation``, or ``None``."""
    expire(balance_id, now)
    if _change(balance_id, now, limit, reserved=amount) is None:
        return None
    reservation = Reservation(id=f"rsv_{secrets.token_urlsafe(18)}", identifier=identifier, feature=feature,
                              balance_id=balance_id, amount=amount, status=HELD,
                              expires_at=now + timedelta(seconds=ttl), created_at=now, updated_at=now, **owner)
    db.session.add(reservation)
    db.session.flush()
    return reservation


def close(reservation_id, status, settled, now):
    """Close a held, unexpired reservation as ``status`` (``settled`` units consumed, the rest returned); return
    ``True``, or ``False`` when it was not held (another request closed it, or it expired)."""
    closing = update(Reservation).where(Reservation.id == reservation_id, Reservation.status == HELD)
    if status == SETTLED:
        closing = closing.where(Reservation.expires_at > now, Reservation.amount >= settled)
    row = db.session.execute(closing.values(status=status, settled=settled, updated_at=now)
                             .returning(Reservation.balance_id, Reservation.amount)
                             .execution_options(synchronize_session=False)).first()
    if row is None:
        return False
    _change(row.balance_id, now, used=settled or 0, reserved=-row.amount)
    return True


def insert_ignoring(model, values, column):
    """``INSERT ... ON CONFLICT (column) DO NOTHING RETURNING id``: the new row's id, or ``None`` when one has
    ``values[column]`` already (on PostgreSQL after waiting for the transaction that inserted it)."""
    dialect = postgresql if db.session.get_bind().dialect.name == "postgresql" else sqlite
    return db.session.execute(dialect.insert(model).values(**values).on_conflict_do_nothing(
        index_elements=[column]).returning(model.id)).scalar()


def status_at(reservation, now):
    """The reservation's status as a client sees it: ``expired`` once a held one is past ``expires_at``."""
    return EXPIRED if reservation.status == HELD and reservation.expires_at <= now else reservation.status
