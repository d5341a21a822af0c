"""``CommitPlan``: recompute the entitled plan and decide the lifecycle notification (SPEC 6).

The plan comes from the stored subscriptions, never from the payload's price (listener rule 1).
Notifications come only from ``previous_attributes`` and the event's object (rules 3 to 5), so a
replayed event decides the same and an event with nothing changed notifies nobody.
"""
from app.billing import objects, plans, state
from app.billing.events import SUBSCRIPTION_EVENTS
from app.models.subscription import VALID_STATUSES
from app.notifications import notify
from app.signals import webhook_handled

# Statuses from which a cleared payment makes a subscription live (SPEC 3 "dead" statuses).
DEAD_STATUSES = frozenset({"incomplete", "incomplete_expired", "past_due", "unpaid", "paused", "canceled"})


def _prices(items):
    return sorted(filter(None, (objects.price_of(item) for item in objects.list_data(items))))


def _cancellation(previous, obj):
    if "cancel_at_period_end" in previous:
        scheduled = bool(obj.get("cancel_at_period_end"))
    elif "cancel_at" in previous:
        # Newer portals schedule a cancellation with cancel_at instead of cancel_at_period_end.
        scheduled = obj.get("cancel_at") is not None
    else:
        return None
    if scheduled:
        ends = objects.ends_at(obj, objects.current_period_end(obj))
        return "cancellation_scheduled", {"ends_at": int(ends.timestamp()) if ends else None}
    return "cancellation_withdrawn", {}


def decide_notifications(event):
    """Return the ``[(kind, data)]`` a subscription event calls for (SPEC 6 rules 3 to 5)."""
    obj = event["data"]["object"]
    base = {"subscription": obj.get("id")}
    if event["type"] == "customer.subscription.deleted":
        return [("subscription_ended", base)]
    if event["type"] != "customer.subscription.updated":
        return []  # created: the subscription exists before payment clears (rule 4)
    previous = event["data"].get("previous_attributes") or {}
    decided = []
    previous_status, status = objects.text_of(previous.get("status")), objects.text_of(obj.get("status"))
    if previous_status in DEAD_STATUSES and status in VALID_STATUSES:
        decided.append(("subscribed", {**base, "from_status": previous_status, "status": status}))
    cancellation = _cancellation(previous, obj)
    if cancellation:
        decided.append((cancellation[0], {**base, **cancellation[1]}))
    if "items" in previous:
        decided.append(("plan_changed", {**base, "from": _prices(previous["items"]), "to": _prices(obj.get("items"))}))
    return decided


@webhook_handled.connect
def commit_plan(sender, event, **extra):
    """Recompute ``users.plan`` and store the lifecycle notification for subscription events."""
    if event["type"] not in SUBSCRIPTION_EVENTS:
        return
    user = extra.get("user") or state.user_for_customer(objects.customer_id_of(event["data"]["object"]))
    if user is None:
        return
    plans.recompute_plan(user)
    for kind, data in decide_notifications(event):
        notify(user, event["id"], kind, data)
