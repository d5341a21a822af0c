"""The quota ledger: balances per billable, feature and period, changed only by single conditional statements.

Concurrent consumes and reservations never take more than the limit together: each is one statement
whose condition is ``used + reserved + :n <= :limit``: a consume's upsert (``INSERT ... ON CONFLICT
(billable, feature, period) DO UPDATE SET used = used + :n WHERE ... RETURNING``), a reservation's
``UPDATE ... WHERE``. On PostgreSQL a second writer of the row waits for the first transaction and
evaluates the condition again on the row the first committed (READ COMMITTED's re-check, which
``ON CONFLICT DO UPDATE`` also makes); SQLite has one writer at a time. Every writer locks a balance's
row before its reservations' rows, so two never wait for each other. Nothing here calls Stripe or
commits: the caller (a view, the CLI) does.
"""
import secrets
from datetime import timedelta

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from app.extensions import db
from app.models.entitlement import (
    EXPIRED,
    HELD,
    SETTLED,
    EntitlementBalance,
    EntitlementConsume,
    EntitlementReservation,
)

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
    _change(balance_id, now)  # the balance's row lock first, as every writer here takes it (see ``close``)
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


_OWNER = "billable, user_id, organization_id"
_OWNER_VALUES = ":billable, :user_id, :organization_id"
# The consume path's statements, as text: SQLAlchemy 2.0 does not cache the compiled form of its dialects'
# ``INSERT ... ON CONFLICT`` constructs (their ``inherit_cache`` is off), so each was compiled again on every
# consume, a third of its CPU; PostgreSQL and SQLite (3.35+) read the same SQL. ``TIMESTAMPS``: the types of the
# timestamps they bind, here and in ``app.entitlements.fast``.
TIMESTAMPS = (bindparam("now", type_=EntitlementBalance.updated_at.type),
              bindparam("reset_at", type_=EntitlementBalance.reset_at.type))
_CLAIM = text(
    f"INSERT INTO entitlement_consumes ({_OWNER}, identifier, feature, required, consumed, balance_id, answer, "
    f"created_at) VALUES ({_OWNER_VALUES}, :identifier, :feature, :amount, :consumed, :balance_id, :answer, :now) "
    "ON CONFLICT (identifier) DO NOTHING RETURNING id").bindparams(
    TIMESTAMPS[0], bindparam("answer", type_=EntitlementConsume.answer.type))
# A new period's balance is made with the units taken (they fit: ``take`` checks the limit first); an existing
# one takes them only if all fit, as ``_change`` does, in the one statement.
_TAKE = (f"INSERT INTO entitlement_balances ({_OWNER}, feature, period, reset_at, used, reserved, created_at, "
         f"updated_at) VALUES ({_OWNER_VALUES}, :feature, :period, :reset_at, :amount, 0, :now, :now) "
         "ON CONFLICT (billable, feature, period) DO UPDATE SET used = entitlement_balances.used + :amount, "
         "updated_at = :now {condition}RETURNING id, used, reserved")
_TAKE_UNLIMITED = text(_TAKE.format(condition="")).bindparams(*TIMESTAMPS)
_TAKE_LIMITED = text(_TAKE.format(
    condition="WHERE entitlement_balances.used + entitlement_balances.reserved + :amount <= :limit ")
).bindparams(*TIMESTAMPS)

def _owner_params(owner):
    return {"billable": owner["billable"], "user_id": owner.get("user_id"),
            "organization_id": owner.get("organization_id")}


def claim(owner, feature, amount, identifier, consumed, balance_id, answer, now):
    """Insert the consume of ``identifier``: ``consumed`` units taken of ``balance_id`` and its ``answer``; return
    ``True``, or ``False`` when ``identifier`` was claimed before (on PostgreSQL after waiting for the transaction
    that claimed it), having inserted nothing."""
    return db.session.connection().execute(_CLAIM, {
        **_owner_params(owner), "identifier": identifier, "feature": feature, "amount": amount,
        "consumed": consumed, "balance_id": balance_id, "answer": answer, "now": now}).scalar() is not None


def take(owner, feature, period, reset_at, amount, limit, now):
    """Take ``amount`` units of ``owner``'s ``feature`` in ``period`` if all fit ``limit`` (``None``: unlimited or
    overage), the balance made when there is none; return ``(balance_id, used, reserved, taken)`` after, ``reserved``
    without expired reservations, ``balance_id`` ``None`` when there is no balance.

    One upsert when the units fit. Expired reservations are returned only when they would change the answer (the
    units did not fit and some are reserved), so a consume is one statement.
    """
    if limit is not None and amount > limit:
        taken = None  # never fits; and ``used + :n`` past 2**63 would be an error on PostgreSQL, not a "no"
    else:
        taken = db.session.connection().execute(_TAKE_UNLIMITED if limit is None else _TAKE_LIMITED, {
            **_owner_params(owner), "feature": feature, "period": period, "reset_at": reset_at, "amount": amount,
            "limit": limit, "now": now}).first()
    if taken is None:
        balance = find(owner, feature, period)
        if balance is None:
            return None, 0, 0, False
        if not balance.reserved:
            return balance.id, balance.used, 0, False
        expire(balance.id, now)
        if limit is not None and amount <= limit:
            after = _change(balance.id, now, limit, used=amount)
            if after is not None:
                return balance.id, after.used, after.reserved, True
        balance = find(owner, feature, period)
        return balance.id, balance.used, balance.reserved, False
    reserved = taken.reserved - unreturned(taken.id, now) if taken.reserved else 0
    return taken.id, taken.used, reserved, True


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
    its balance's ``(used, reserved)`` after, or ``None`` when it was not held (another request closed it, or it
    expired)."""
    # The balance is locked before the reservation, the order of every writer of both (a consume's upsert locks
    # the balance, then returns expired reservations): the other order deadlocks against it on PostgreSQL.
    balance_id = db.session.scalar(select(Reservation.balance_id).where(Reservation.id == reservation_id))
    if balance_id is None:
        return None
    _change(balance_id, now)
    closing = update(Reservation).where(Reservation.id == reservation_id, Reservation.status == HELD)
    if status == SETTLED:
        closing = closing.where(Reservation.expires_at > now, Reservation.amount >= settled)
    row = db.session.execute(closing.values(status=status, settled=settled, updated_at=now)
                             .returning(Reservation.amount)
                             .execution_options(synchronize_session=False)).first()
    if row is None:
        return None
    return _change(balance_id, now, used=settled or 0, reserved=-row.amount)


def status_at(reservation, now):
    """The reservation's status as a client sees it: ``expired`` once a held one is past ``expires_at``."""
    return EXPIRED if reservation.status == HELD and reservation.expires_at <= now else reservation.status
