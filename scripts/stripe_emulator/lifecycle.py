"""Subscription updates and the passage of time (renewals, trial ends, cancellations).

Used by the API (``POST /v1/subscriptions/{id}``), the billing portal forms and
``/_emulator/clock/advance``. The caller holds the store lock.
"""

from __future__ import annotations

from . import billing, changes, dunning, objects, trials
from .state import Store, StripeError, public

# Stripe moves a subscription whose first invoice is still unpaid to incomplete_expired.
INCOMPLETE_EXPIRY_SECONDS = 23 * 3600


def update_subscription(store: Store, sub: dict, params: dict) -> dict:
    billing.ensure_mutable(sub, params)
    changes.check_update(params)
    before = public(sub)
    _apply_cancellation(store, sub, params)
    if not changes.change_items(store, sub, params):
        # The charge failed or needs authentication: the change waits in pending_update.
        store.emit("customer.subscription.updated", sub, before)
        return sub
    for i, entry in enumerate(params.get("items") or []):
        _add_or_remove_item(store, sub, entry, i)
    if "default_payment_method" in params:
        pm_id = params["default_payment_method"]
        sub["default_payment_method"] = billing.customer_pm(
            store, sub["customer"], pm_id, "default_payment_method") if pm_id else None
    if "metadata" in params:
        merge_metadata(sub, params["metadata"])
    _apply_details(sub, params)
    store.emit("customer.subscription.updated", sub, before)
    return sub


def _apply_cancellation(store: Store, sub: dict, params: dict) -> None:
    if "cancel_at_period_end" in params:
        billing.schedule_cancel(store, sub, params["cancel_at_period_end"])
    if "cancel_at" in params:
        if params["cancel_at"] in (None, ""):
            billing.schedule_cancel(store, sub, False)
        else:
            sub.update(cancel_at=int(params["cancel_at"]), cancel_at_period_end=False,
                       canceled_at=store.now())
            sub["cancellation_details"]["reason"] = "cancellation_requested"


def _apply_details(sub: dict, params: dict) -> None:
    if "description" in params:
        sub["description"] = params["description"] or None
    if "cancellation_details" in params:
        for key in ("comment", "feedback"):
            if key in (params["cancellation_details"] or {}):
                sub["cancellation_details"][key] = params["cancellation_details"][key] or None
    save = (params.get("payment_settings") or {}).get("save_default_payment_method")
    if save:
        sub["payment_settings"]["save_default_payment_method"] = save


def _add_or_remove_item(store: Store, sub: dict, entry: dict, i: int) -> None:
    # Price and quantity changes of existing items were applied by ``changes.change_items``.
    if entry.get("id"):
        item = billing.find_item(sub, entry["id"], f"items[{i}][id]")
        if entry.get("deleted") in (True, "true"):
            sub["items"]["data"].remove(item)
        return
    p = store.get("prices", entry.get("price"), f"items[{i}][price]")
    sub["items"]["data"].append(objects.subscription_item(
        store, sub["id"], p, int(entry.get("quantity") or 1),
        billing.period_start(sub), billing.period_end(sub)))


def merge_metadata(obj: dict, metadata) -> None:
    """Stripe semantics: ``metadata=""`` clears all keys, ``metadata[k]=""`` removes k."""
    if metadata in (None, ""):
        obj["metadata"] = {}
        return
    merged = dict(obj["metadata"])
    for key, value in metadata.items():
        if value in (None, ""):
            merged.pop(key, None)
        else:
            merged[key] = str(value)
    obj["metadata"] = merged


def _due_at(sub: dict) -> int | None:
    if sub["status"] == "incomplete":
        return sub["created"] + INCOMPLETE_EXPIRY_SECONDS
    if sub["status"] not in ("active", "past_due", "trialing", "unpaid"):
        return None
    due = billing.period_end(sub)
    return min(due, sub["cancel_at"]) if sub["cancel_at"] else due


def _pending(store: Store, sub: dict) -> list[tuple[int, object]]:
    due = _due_at(sub)
    return ([(due, process_due)] if due is not None else []) + dunning.due(store, sub) + changes.due(sub)


def advance(store: Store, seconds: float) -> list[str]:
    """Move the clock forward and run everything that falls due, oldest first.

    Each step runs at the emulator's clock, which is already the target time: events carry
    ``created`` = the end of the advance, as Stripe's test clocks do.
    """
    store.clock_offset += seconds
    now, processed = store.now(), []
    for _ in range(10_000):  # guard: each pass moves one subscription one step forward
        due = [(d, order, s["id"], action) for order, s in enumerate(store.subscriptions.values())
               for d, action in _pending(store, s) if d <= now]
        if not due:
            break
        _, _, sub_id, action = min(due, key=lambda entry: entry[:2])
        action(store, store.subscriptions[sub_id])
        processed.append(sub_id)
    return processed


def process_due(store: Store, sub: dict) -> None:
    if sub["status"] == "incomplete":
        before = public(sub)
        sub["status"] = "incomplete_expired"
        inv = store.invoices.get(sub["latest_invoice"] or "")
        if inv and inv["status"] == "open":
            inv["status"] = "void"
            inv["status_transitions"]["voided_at"] = store.now()
            store.emit("invoice.voided", inv)
        store.emit("customer.subscription.updated", sub, before)
    elif sub["cancel_at"] and sub["cancel_at"] <= billing.period_end(sub):
        billing.cancel_now(store, sub, ended_at=sub["cancel_at"])
    elif not trials.end_without_method(store, sub):
        renew(store, sub)


def renew(store: Store, sub: dict) -> None:
    """Start the next period: invoice it and charge the default payment method."""
    before = public(sub)
    old_start, start = billing.period_start(sub), billing.period_end(sub)
    rec = sub["items"]["data"][0]["price"]["recurring"]
    end = objects.add_interval(start, rec["interval"], rec["interval_count"])
    for item in sub["items"]["data"]:
        item["current_period_start"], item["current_period_end"] = start, end
    if sub["status"] == "trialing":
        sub["status"] = "active"
    inv = billing.open_invoice(store, sub, "subscription_cycle", start, end,
                               lines=changes.take_prorations(sub) + objects.period_lines(sub, start, end))
    inv["period_start"], inv["period_end"] = old_start, start
    store.emit("customer.subscription.updated", sub, before)
    billing.finalize(store, inv)
    if inv["amount_due"] == 0:
        billing.mark_paid(store, inv)
        return
    pm = dunning.paying_method(store, sub)
    force_fail = sub["id"] in store.fail_next_renewal
    store.fail_next_renewal.discard(sub["id"])
    # A card that needs authentication cannot be charged off-session: it fails too.
    status = billing.attempt(store, inv, pm, force_fail=force_fail
                             or billing.card_outcome(pm) == "requires_action")
    before = public(sub)
    if status == "succeeded":
        sub["status"] = "active"
    elif sub["status"] != "unpaid":
        sub["status"] = "past_due"
    store.emit("customer.subscription.updated", sub, before)


def require_subscription(store: Store, sub_id: str, param: str = "subscription") -> dict:
    sub = store.get("subscriptions", sub_id, param)
    if sub["status"] in ("canceled", "incomplete_expired"):
        raise StripeError(400, f"Subscription {sub_id} is {sub['status']}.", param=param)
    return sub
