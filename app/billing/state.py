"""Writing provider subscriptions into local rows. Nothing here commits: the caller owns the transaction."""
from functools import cache

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import joinedload

from app.billing import objects, redemptions, writer
from app.billing.statuses import TERMINAL_STATUSES
from app.extensions import db
from app.models import BILLABLE_KINDS, Subscription
from app.timeutil import from_timestamp, utcnow


def _locking(model):
    table = model.__table__
    return (update(table).where(table.c.provider_id == bindparam("customer_id"))
            .values(updated_at=bindparam("now")).returning(table.c.id))


def _loading(model):
    # A billable with its subscriptions and items, read afresh: everything a webhook reads, in one query.
    # Built once: rebuilding the statement and its loader options per event cost a tenth of the event.
    return (select(model).where(model.id == bindparam("billable_id"))
            .options(joinedload(model.subscriptions).joinedload(Subscription.items))
            .execution_options(populate_existing=True))


@cache
def _locks():
    # Customer ids are Stripe's, unique across the kinds: a user's customer costs one statement, the next kind's two.
    # Built on first use, not at import: a loader option configures every mapper, which a command that
    # never locks a customer (``flask db upgrade``) need not pay for.
    return tuple((_locking(model), _loading(model)) for model in BILLABLE_KINDS)


def billable_for_customer(customer_id):
    """Return the billable (a user or an organisation) whose ``provider_id`` is ``customer_id``, or ``None``."""
    if not customer_id:
        return None
    return next((found for model in BILLABLE_KINDS if (found := model.by_customer(customer_id)) is not None), None)


def lock_customer(customer_id):
    """Lock the billable of ``customer_id`` as ``Billable.lock`` does; return it, or ``None`` if unknown.

    The billable comes with its subscriptions and their items, so a webhook for a user's customer
    reads everything it needs in two round trips (the locking UPDATE ... RETURNING, then one joined
    SELECT); an organisation's takes one UPDATE more.
    """
    if not customer_id:
        return None
    # Core, on the session's connection: no ORM object is involved until the load below. Two statements,
    # not one SELECT ... FOR NO KEY UPDATE with the joins: under READ COMMITTED a SELECT that waited for the
    # lock re-reads only the locked row, and its joined rows come from the snapshot taken before the
    # wait (PostgreSQL docs, "Read Committed Isolation Level"), so it would miss a subscription that a
    # concurrent delivery for the same customer just wrote. The SELECT after the UPDATE sees it.
    connection = db.session.connection()
    for locking, loading in _locks():
        billable_id = connection.scalar(locking, {"customer_id": customer_id, "now": utcnow()})
        if billable_id is not None:
            return db.session.execute(loading, {"billable_id": billable_id}).unique().scalar_one()
    return None


def subscription_of(billable, provider_id):
    """Return the billable's subscription row for the provider id, or ``None``."""
    return next((s for s in billable.subscriptions if s.provider_id == provider_id), None)


def owner_of_subscription(provider_id):
    """Return the ``billable_key`` of the billable whose row holds the provider subscription ``provider_id``,
    or ``None`` when no row does."""
    row = db.session.execute(select(Subscription.user_id, Subscription.organization_id)
                             .where(Subscription.provider_id == provider_id)).first()
    if row is None:
        return None
    return f"user:{row.user_id}" if row.user_id is not None else f"organization:{row.organization_id}"


def live_as_of():
    """Return the ``as_of`` of a live read: now, to the second, as provider event times are.

    Truncating makes an event from the same second as the read a tie, which the webhook path
    resolves (by the statuses' stages when they tell, else by reading the live object) instead of an
    event that looks older than it is.
    """
    return utcnow().replace(microsecond=0)


def is_stale(subscription, as_of):
    """Whether state as of ``as_of`` is older than what ``subscription`` already holds."""
    return subscription is not None and as_of < subscription.provider_updated_at


def apply_subscription(billable, obj, as_of):
    """Write the provider subscription ``obj`` (a dict) for ``billable`` and return the row.

    ``as_of`` (aware UTC) is the time the state was current: the event's ``created`` or, for a
    live read, now. The caller checks ``is_stale`` first; the row's ``provider_updated_at`` never
    moves backwards (``writer``'s guarded upsert). Items that are no longer on the subscription are
    deleted. Written at once, by ``app.billing.writer``'s statements.
    """
    existing = subscription_of(billable, obj["id"])
    items = objects.items_of(obj)
    period_end = objects.current_period_end(obj)
    pending = objects.pending_update_of(obj)
    licensed = [item for item in items if not objects.is_metered(item)]  # metered items: the plan's usage
    discount = objects.discount_of(obj, existing.discount if existing else None)
    read = discount is not objects.UNREAD  # named by id only, unread: what is stored stays
    values = {
        "provider_status": obj.get("status") or "incomplete",
        "provider_price": objects.price_of(licensed[0]) if licensed else None,
        "quantity": licensed[0].get("quantity") if len(licensed) == 1 else None,
        "default_payment_method": objects.ref_id(obj.get("default_payment_method")),
        "cancel_at_period_end": bool(obj.get("cancel_at_period_end")),
        "current_period_end": period_end,
        "trial_ends_at": from_timestamp(obj.get("trial_end")),
        "ends_at": objects.ends_at(obj, period_end),
        "pending_price": pending["price"] if pending else None,
        "pending_quantity": pending["quantity"] if pending else None,
        "pending_expires_at": from_timestamp(pending["expires_at"]) if pending else None,
        "test_clock": objects.ref_id(obj.get("test_clock")),
        "discount": discount if read else existing.discount if existing else None,
        "billing_mode": (obj.get("billing_mode") or {}).get("type") or (existing.billing_mode if existing else None),
        "provider_created_at": from_timestamp(obj.get("created")),
        "provider_updated_at": max(as_of, existing.provider_updated_at) if existing else as_of,
    }
    subscription = writer.write_subscription(billable, existing, obj["id"], values,
                                             (obj.get("metadata") or {}).get("type") or "default")
    if subscription is None:  # the guard kept a newer row: nothing to add to it
        return existing
    if read:
        redemptions.remember(billable, (discount or {}).get("promotion_code"), obj["id"])
    writer.write_items(subscription, [{"provider_id": data["id"], "provider_price": objects.price_of(data),
                                       "provider_product": objects.product_of(data),
                                       "quantity": data.get("quantity")} for data in items])
    if values["provider_status"] in TERMINAL_STATUSES:
        writer.end_seat_holds(billable, obj["id"])
    return subscription
