"""Writing provider subscriptions into local rows. Nothing here commits: the caller owns the transaction."""
from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import joinedload

from app.billing import objects, promotions
from app.extensions import db
from app.models import Subscription, SubscriptionItem, User
from app.timeutil import from_timestamp, utcnow

_LOCK_CUSTOMER = (update(User.__table__).where(User.__table__.c.provider_id == bindparam("customer_id"))
                  .values(updated_at=bindparam("now")).returning(User.__table__.c.id))

# A user with their subscriptions and items, read afresh: everything a webhook reads, in one query.
# Built once: rebuilding the statement and its loader options per event cost a tenth of the event.
_USER_WITH_SUBSCRIPTIONS = (
    select(User)
    .where(User.id == bindparam("user_id"))
    .options(joinedload(User.subscriptions).joinedload(Subscription.items))
    .execution_options(populate_existing=True)
)


def user_for_customer(customer_id):
    """Return the user whose ``provider_id`` is ``customer_id``, or ``None`` for an unknown customer."""
    if not customer_id:
        return None
    return db.session.scalars(select(User).where(User.provider_id == customer_id)).first()


def lock_customer(customer_id):
    """Lock the user of ``customer_id`` as ``models.user.lock_user`` does; return it, or ``None`` if unknown.

    The user comes with its subscriptions and their items, so a webhook reads everything it
    needs in two round trips (the locking UPDATE ... RETURNING, then one joined SELECT).
    """
    if not customer_id:
        return None
    # Core, on the session's connection: no ORM object is involved until the load below.
    user_id = db.session.connection().scalar(_LOCK_CUSTOMER, {"customer_id": customer_id, "now": utcnow()})
    if user_id is None:
        return None
    return db.session.execute(_USER_WITH_SUBSCRIPTIONS, {"user_id": user_id}).unique().scalar_one()


def subscription_of(user, provider_id):
    """Return the user's subscription row for the provider id, or ``None``."""
    return next((s for s in user.subscriptions if s.provider_id == provider_id), None)


def owner_of_subscription(provider_id):
    """Return the id of the user whose row holds the provider subscription ``provider_id``, or ``None``."""
    return db.session.scalar(select(Subscription.user_id).where(Subscription.provider_id == provider_id))


def live_as_of():
    """Return the ``as_of`` of a live read: now, to the second, as provider event times are.

    Truncating makes an event from the same second as the read a tie, which the webhook path
    resolves by reading the live object, instead of an event that looks older than it is.
    """
    return utcnow().replace(microsecond=0)


def is_stale(subscription, as_of):
    """Whether state as of ``as_of`` is older than what ``subscription`` already holds."""
    return subscription is not None and as_of < subscription.provider_updated_at


def apply_subscription(user, obj, as_of):
    """Write the provider subscription ``obj`` (a dict) for ``user`` and return the row.

    ``as_of`` (aware UTC) is the time the state was current: the event's ``created`` or, for a
    live read, now. The caller checks ``is_stale`` first; the row's ``provider_updated_at`` never
    moves backwards. Items that are no longer on the subscription are deleted.
    """
    subscription = subscription_of(user, obj["id"])
    if subscription is None:
        subscription = Subscription(user=user, provider_id=obj["id"], provider_updated_at=as_of,
                                    type=(obj.get("metadata") or {}).get("type") or "default")
        db.session.add(subscription)
    items = objects.items_of(obj)
    period_end = objects.current_period_end(obj)
    subscription.provider_status = obj.get("status") or "incomplete"
    licensed = [item for item in items if not objects.is_metered(item)]  # metered items: the plan's usage
    subscription.provider_price = objects.price_of(licensed[0]) if licensed else None
    subscription.quantity = licensed[0].get("quantity") if len(licensed) == 1 else None
    subscription.default_payment_method = objects.ref_id(obj.get("default_payment_method"))
    subscription.cancel_at_period_end = bool(obj.get("cancel_at_period_end"))
    subscription.current_period_end = period_end
    subscription.trial_ends_at = from_timestamp(obj.get("trial_end"))
    subscription.ends_at = objects.ends_at(obj, period_end)
    pending = objects.pending_update_of(obj)
    subscription.pending_price = pending["price"] if pending else None
    subscription.pending_quantity = pending["quantity"] if pending else None
    subscription.pending_expires_at = from_timestamp(pending["expires_at"]) if pending else None
    subscription.test_clock = objects.ref_id(obj.get("test_clock"))
    discount = objects.discount_of(obj, subscription.discount)
    if discount is not objects.UNREAD:  # the webhook writer read the live subscription for it
        subscription.discount = discount
        promotions.remember(user, (discount or {}).get("promotion_code"), subscription.provider_id)
    subscription.provider_created_at = from_timestamp(obj.get("created"))
    subscription.provider_updated_at = max(as_of, subscription.provider_updated_at)
    _apply_items(subscription, items)
    # Not flushed here: the next query autoflushes, or the commit does, so that a webhook's writes
    # (this row, the listeners' user, notifications and outbox rows) are one unit of work, not two.
    return subscription


def _apply_items(subscription, items):
    existing = {item.provider_id: item for item in subscription.items}
    seen = set()
    for data in items:
        item = existing.get(data["id"])
        if item is None:
            item = SubscriptionItem(provider_id=data["id"])
            subscription.items.append(item)
        item.provider_price = objects.price_of(data)
        item.provider_product = objects.product_of(data)
        item.quantity = data.get("quantity")
        seen.add(data["id"])
    for provider_id, item in existing.items():
        if provider_id not in seen:
            subscription.items.remove(item)
