"""``CommitPlan``: recompute the entitled plan and decide the lifecycle notifications (SPEC 6).

The plan comes from the stored subscriptions, never from the payload's price (listener rule 1).
Notifications come only from ``previous_attributes`` and the event's object (rules 3 to 5), so a
replayed event decides the same and an event with nothing changed notifies nobody. The kinds and
their ``data`` are CONTRACT "Additions"; the README lists them with the events that cause them.
"""
from app.billing import objects, plans, state
from app.billing.events import COMMIT_PLAN, handled_by
from app.billing.provider_checkout import CHECKOUT_ORIGIN
from app.billing.statuses import DUNNING_STATUSES, SUBSCRIBING_STATUSES, VALID_STATUSES
from app.entitlements.updates import announce
from app.notifications import notified, notify
from app.signals import webhook_handled

EVENT_TYPES = handled_by(COMMIT_PLAN)
# CONTRACT "Selling": a subscription gets at most one of each, whatever else arrives.
ONCE_PER_SUBSCRIPTION = frozenset({"subscribed", "trial_started"})


def _prices(items):
    return sorted(filter(None, (objects.price_of(item) for item in objects.list_data(items))))


def _quantity(items):
    """The seats of a subscription: its items' quantities added up (``None`` when none is a number)."""
    quantities = [_integer(item.get("quantity")) for item in objects.list_data(items)]
    quantities = [q for q in quantities if q is not None]
    return sum(quantities) if quantities else None


def _items_change(previous, obj):
    """``plan_changed`` when the prices differ, else ``quantity_changed`` when the seats do."""
    # Since API 2025-03-31 a renewal moves the period on the items, so "items" in the previous
    # attributes alone is no plan change: the prices must differ.
    if "items" not in previous:
        return None
    before, after = _prices(previous["items"]), _prices(obj.get("items"))
    if before != after:
        return "plan_changed", {"from": before, "to": after}
    seats_before, seats_after = _quantity(previous["items"]), _quantity(obj.get("items"))
    if seats_before != seats_after:
        return "quantity_changed", {"from": seats_before, "to": seats_after}
    return None


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


def _status_change(previous, obj):
    """The kind a status move calls for: cleared from a dead status, into dunning, or out of it."""
    if "status" not in previous:
        return None
    before, after = objects.text_of(previous.get("status")), objects.text_of(obj.get("status"))
    if before == after:
        return None
    if before in SUBSCRIBING_STATUSES and after in VALID_STATUSES:
        return "subscribed"
    if after in DUNNING_STATUSES:
        return "past_due"
    if before in DUNNING_STATUSES and after in VALID_STATUSES:
        return "payment_recovered"
    return None


def _updated(event):
    obj, base = event["data"]["object"], {"subscription": event["data"]["object"].get("id")}
    previous = event["data"].get("previous_attributes") or {}
    decided = []
    status_kind = _status_change(previous, obj)
    if status_kind:
        decided.append((status_kind, {**base, "from_status": objects.text_of(previous.get("status")),
                                      "status": objects.text_of(obj.get("status"))}))
    for change in (_cancellation(previous, obj), _items_change(previous, obj)):
        if change:
            decided.append((change[0], {**base, **change[1]}))
    return decided


def _integer(value):
    """An integer (a count, a Unix timestamp in seconds) as the provider sent it, else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _payment_failed(event):
    invoice = event["data"]["object"]
    subscription = objects.subscription_id_of_invoice(invoice)
    if subscription is None:
        return []  # a one-off invoice: no subscription is at risk
    if invoice.get("billing_reason") == "subscription_create":
        # The first invoice fails while the subscription is still incomplete: the person is at the
        # payment form, which says so (Pay's handler skips incomplete subscriptions the same way).
        return []
    if invoice.get("billing_reason") == "subscription_update":
        # A swap's invoice (always_invoice): the subscription keeps its old price and is not at risk.
        return [("swap_payment_failed", {
            "subscription": subscription, "reason": "payment_failed", "invoice": objects.ref_id(invoice.get("id")),
            "hosted_invoice_url": objects.text_of(invoice.get("hosted_invoice_url"))})]
    return [("payment_failed", {
        "subscription": subscription,
        "invoice": objects.ref_id(invoice.get("id")),
        "attempt_count": _integer(invoice.get("attempt_count")),
        # Stripe leaves it null after the last retry of its schedule.
        "next_payment_attempt": _integer(invoice.get("next_payment_attempt")),
        "hosted_invoice_url": objects.text_of(invoice.get("hosted_invoice_url")),
    })]


def _deleted(event):
    return [("subscription_ended", {"subscription": event["data"]["object"].get("id")})]


def _pending_update_expired(event):
    return [("swap_payment_failed", {"subscription": event["data"]["object"].get("id"), "reason": "expired"})]


def _trial_will_end(event):
    obj = event["data"]["object"]
    return [("trial_will_end", {"subscription": obj.get("id"), "trial_end": _integer(obj.get("trial_end"))})]


def _created(event):
    """A trial created with its card (in the Dashboard, by the API) starts at once (rule 4: no activating
    update follows). The service's own trials start when their card is saved and accepted: an intent's
    on its SetupIntent, a Checkout one (``metadata.origin=checkout``) on its session's completion
    (``notifications.announce_trial``), so that a card that already had a trial is never told one began."""
    obj = event["data"]["object"]
    if objects.text_of(obj.get("status")) != "trialing" or objects.ref_id(obj.get("default_payment_method")) is None \
            or (obj.get("metadata") or {}).get("origin") == CHECKOUT_ORIGIN:
        return []
    return [("trial_started", {"subscription": obj.get("id"), "trial_end": _integer(obj.get("trial_end"))})]


# Event type -> its decision (STYLE rule 8). Creation decides only a trial that has its card: a paid
# subscription exists before its payment clears, and is announced by the activating update (rule 4).
DECIDERS = {
    "customer.subscription.created": _created,
    "customer.subscription.updated": _updated,
    "customer.subscription.deleted": _deleted,
    "customer.subscription.trial_will_end": _trial_will_end,
    "customer.subscription.pending_update_expired": _pending_update_expired,
    "invoice.payment_failed": _payment_failed,
}


def decide_notifications(event):
    """Return the ``[(kind, data)]`` an event calls for (SPEC 6 rules 3 to 5), at most one per kind."""
    decide = DECIDERS.get(event["type"])
    return decide(event) if decide else []


@webhook_handled.connect
def commit_plan(sender, event, **extra):
    """Recompute ``users.plan`` and store the event's lifecycle notifications.

    Acts on the types ``app.billing.events`` names for it and returns ``True`` when it did
    (blinker hands each receiver's result back to the sender).
    """
    if event["type"] not in EVENT_TYPES:
        return False
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(event["data"]["object"]))
    if billable is None:
        return False
    plans.recompute_plan(billable)
    announce(billable)  # entitlements.updated, when the plan changed the features (CONTRACT "Entitlements")
    for kind, data in decide_notifications(event):
        # One per subscription whatever arrives: a Checkout subscription's comes from its session.
        if kind in ONCE_PER_SUBSCRIPTION and notified(billable, kind, "subscription", data.get("subscription")):
            continue
        notify(billable, event["id"], kind, data)
    return True
