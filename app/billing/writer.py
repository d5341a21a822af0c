"""The Core writer: every row a webhook writes, as SQLAlchemy Core statements (issue 35).

The ORM's unit of work was a third of a webhook's CPU in a profile (``py-spy``, docs/testing.md
"Webhook write path"): each flush sorts its objects, builds its statements and reads back what it
wrote. Here each write is one statement, built once at import (so compiled once per process), run
on the session's connection, so it is part of the caller's one transaction. The ORM models stay
the schema (Alembic reads them) and the objects the readers use: after a statement the loaded
objects are given the written values as their committed state (``set_committed_value``), so the
session has nothing left to flush and a reader later in the transaction sees what was written.

The ordering guard is in the statement itself, as stripe-sync-engine keeps it: a subscription is
written by ``INSERT ... ON CONFLICT (provider_id) DO UPDATE ... WHERE`` the stored
``provider_updated_at`` is not newer than the one written (an equal one is the same-second tie,
which the caller resolved by the statuses' stages or by reading the live object) and the row is the
same user's, so an older event can never roll a row back, whatever the order of concurrent
transactions. PostgreSQL and SQLite (3.24+; ``RETURNING`` 3.35+) speak the same SQL.

``end_seat_holds`` is the exception: an ORM bulk ``UPDATE``, built per call, as it runs only when a subscription
ends, and the session's loaded holds must see their new status.
"""
from sqlalchemy import bindparam, inspect, text, update
from sqlalchemy.orm import make_transient_to_detached
from sqlalchemy.orm.attributes import set_committed_value

from app.extensions import db
from app.models import Notification, NotificationDelivery, Subscription, SubscriptionItem
from app.models.delivery import PENDING
from app.models.seat import EXPIRED, HELD, SeatChange
from app.timeutil import utcnow

# The columns a write sets; the billable's (``user_id`` or ``organization_id``), ``type``, ``provider_id``
# and ``created_at`` are set once.
SUBSCRIPTION_STATE = ("provider_status", "provider_price", "quantity", "default_payment_method",
                      "cancel_at_period_end", "current_period_end", "trial_ends_at", "ends_at", "pending_price",
                      "pending_quantity", "pending_expires_at", "test_clock", "discount", "billing_mode",
                      "provider_created_at", "provider_updated_at", "updated_at")
_SUBSCRIPTION_INSERTED = ("user_id", "organization_id", "type", "provider_id", "created_at", *SUBSCRIPTION_STATE)
ITEM_STATE = ("provider_product", "provider_price", "quantity", "updated_at")
_ITEM_INSERTED = ("subscription_id", "provider_id", "created_at", *ITEM_STATE)


def _typed(table, names):
    """Bind parameters typed as ``table``'s columns (``UTCDateTime``, ``JSON`` convert their values)."""
    return [bindparam(name, type_=table.c[name].type) for name in names]


def _upsert(table, inserted, updated, guard):
    columns = ", ".join(inserted)
    values = ", ".join(f":{name}" for name in inserted)
    sets = ", ".join(f"{name} = excluded.{name}" for name in updated)
    return text(f"INSERT INTO {table.name} ({columns}) VALUES ({values}) ON CONFLICT (provider_id) DO UPDATE "
                f"SET {sets} WHERE {guard} RETURNING id").bindparams(*_typed(table, inserted))


_SUBSCRIPTIONS = Subscription.__table__
_ITEMS = SubscriptionItem.__table__
# The ordering guard: never older than the stored state, never another billable's subscription (one of
# the two owner columns is NULL: compared through COALESCE, which both databases have).
_UPSERT_SUBSCRIPTION = _upsert(
    _SUBSCRIPTIONS, _SUBSCRIPTION_INSERTED, SUBSCRIPTION_STATE,
    "subscriptions.provider_updated_at <= excluded.provider_updated_at "
    "AND COALESCE(subscriptions.user_id, 0) = COALESCE(excluded.user_id, 0) "
    "AND COALESCE(subscriptions.organization_id, '') = COALESCE(excluded.organization_id, '')")
# An item belongs to one subscription for life (Stripe never moves one): the guard keeps it there.
_UPSERT_ITEM = _upsert(_ITEMS, _ITEM_INSERTED, ITEM_STATE,
                       "subscription_items.subscription_id = excluded.subscription_id")
_DELETE_ITEMS = text("DELETE FROM subscription_items WHERE subscription_id = :subscription_id "
                     "AND provider_id IN :gone").bindparams(bindparam("gone", expanding=True))
_INSERT_NOTIFICATION = text("INSERT INTO notifications (user_id, kind, event_id, data, created_at) "
                            "VALUES (:user_id, :kind, :event_id, :data, :created_at) RETURNING id").bindparams(
    *_typed(Notification.__table__, ("data", "created_at")))
_INSERT_DELIVERY = text(
    "INSERT INTO notification_deliveries (notification_id, channel, status, attempts, next_attempt_at, created_at, "
    "updated_at) VALUES (:notification_id, :channel, :status, 0, :now, :now, :now)").bindparams(
    bindparam("now", type_=NotificationDelivery.__table__.c.created_at.type))


def _execute(statement, params):
    return db.session.connection().execute(statement, params)


def _loaded(model, values, **relationships):
    """A persistent, clean ``model`` object of a row just written with ``values``: as if loaded from it."""
    row = model(**values)
    make_transient_to_detached(row)
    db.session.add(row)
    for name, value in relationships.items():
        set_committed_value(row, name, value)
    return row


def _committed(row, values):
    for name, value in values.items():
        set_committed_value(row, name, value)


def write_subscription(billable, existing, provider_id, values, kind):
    """Write the subscription ``provider_id`` of ``billable`` (a user or an organisation) with ``values``
    (``SUBSCRIPTION_STATE`` but ``updated_at``); return its row. ``existing`` is the loaded row or
    ``None``; ``kind`` the ``type`` of a new row. Return ``None`` when the guard kept the stored row (a
    newer one, or another billable's): nothing was written."""
    now = utcnow()
    params = {**values, "updated_at": now, "user_id": None, "organization_id": None, **billable.owner_columns(),
              "type": kind, "provider_id": provider_id, "created_at": now}
    written = _execute(_UPSERT_SUBSCRIPTION, params).scalar()
    if written is None:
        return None
    if existing is not None:
        _committed(existing, {**values, "updated_at": now})
        return existing
    row = _loaded(Subscription, {"id": written, **params}, **{billable.kind: billable}, items=[])
    set_committed_value(billable, "subscriptions", [*billable.subscriptions, row])
    return row


def write_items(subscription, items):
    """Make ``subscription``'s items the ``items`` given (``[{"provider_id", *ITEM_STATE but updated_at}]``):
    a changed or new item is upserted, a missing one deleted, an unchanged one not touched."""
    existing = {item.provider_id: item for item in subscription.items}
    now, kept = utcnow(), []
    for values in items:
        item = existing.get(values["provider_id"])
        state = {name: values[name] for name in ITEM_STATE if name != "updated_at"}
        if item is not None and all(getattr(item, name) == value for name, value in state.items()):
            kept.append(item)
            continue
        params = {**state, "updated_at": now, "subscription_id": subscription.id, "provider_id": values["provider_id"],
                  "created_at": now}
        written = _execute(_UPSERT_ITEM, params).scalar_one()
        if item is not None:
            _committed(item, {**state, "updated_at": now})
            kept.append(item)
        else:
            kept.append(_loaded(SubscriptionItem, {"id": written, **params}, subscription=subscription))
    gone = [provider_id for provider_id in existing if provider_id not in {v["provider_id"] for v in items}]
    if gone:
        _execute(_DELETE_ITEMS, {"subscription_id": subscription.id, "gone": gone})
        for provider_id in gone:
            db.session.expunge(existing[provider_id])
    set_committed_value(subscription, "items", kept)


def end_seat_holds(billable, provider_id):
    """End the seats held for invitees on the subscription ``provider_id``, which Stripe ended: nobody can take a
    seat on it any more, so the hold ends as when Stripe drops the pending update unpaid
    (``app.organizations.seats.expire``); the invitations stay valid. The held invoice, which the end leaves open,
    is voided by the listener of ``customer.subscription.deleted`` (``app.organizations.seats.void_ended_hold``), or
    by the sync that wrote the end (``app.billing.sync``). Only an organisation holds seats. One statement; loaded
    holds are given the new status."""
    if billable.kind == "organization":
        db.session.execute(update(SeatChange).where(
            SeatChange.organization_id == billable.id, SeatChange.status == HELD,
            SeatChange.provider_subscription == provider_id).values(status=EXPIRED, resolved_at=utcnow()))


def write_billable(billable, **values):
    """Set columns of the stored ``billable`` (a user or an organisation: ``plan``, the card's ``pm_*``)
    that differ from ``values``.

    A billable not stored yet (pending in the session, or not a mapped object at all) gets them as
    attributes, written at its flush if any.
    """
    changed = {name: value for name, value in values.items() if getattr(billable, name, None) != value}
    if not changed:
        return
    stored = inspect(billable, raiseerr=False)
    if stored is None or not stored.persistent:
        for name, value in changed.items():
            setattr(billable, name, value)
        return
    now, table = utcnow(), type(billable).__table__
    db.session.connection().execute(update(table).where(table.c.id == billable.id).values(**changed, updated_at=now))
    _committed(billable, {**changed, "updated_at": now})


def write_notification(user, event_id, kind, data, channels):
    """Insert a notification of ``kind`` for ``user`` and one pending delivery per channel name; return its id."""
    now = utcnow()
    notification_id = _execute(_INSERT_NOTIFICATION, {"user_id": user.id, "kind": kind, "event_id": event_id,
                                                      "data": data, "created_at": now}).scalar_one()
    if channels:
        _execute(_INSERT_DELIVERY, [{"notification_id": notification_id, "channel": channel, "status": PENDING,
                                     "now": now} for channel in channels])
    return notification_id
