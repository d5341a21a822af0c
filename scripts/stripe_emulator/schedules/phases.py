"""A schedule's phases as time passes: the next phase starts when the current one ends, the last one ends the schedule.

"When a phase starts, Stripe updates the subscription based on the next phase's attributes"
(https://docs.stripe.com/billing/subscriptions/subscription-schedules#transitioning): its items (a price
kept keeps its item, a new price gets a new one), its discounts (the phase's: none given, none kept, which is
why a schedule must carry a subscription's discount into its next phase), its default payment method and
automatic tax. A phase that starts as its subscription's period ends changes the items as a swap with
``proration_behavior=none`` at the renewal would: nothing is invoiced at the change, and the renewal,
which ``subscriptions/renewals.py`` runs just after (``due`` lists this first), bills the new items with the
new discounts. "A subscription schedule is completed after the last phase is finished": with
``end_behavior=release`` the subscription is released and goes on as it is, with ``cancel`` it is cancelled
(https://docs.stripe.com/billing/subscriptions/subscription-schedules#completing).
"""

from __future__ import annotations

from ..core.store import Store, merge_metadata, public
from ..discounts import models as discount_models
from ..subscriptions import objects
from ..subscriptions.models import cancel_now
from . import models


def due(store: Store, sub: dict) -> list[tuple[int, object]]:
    """When ``sub``'s active schedule next acts: the end of its current phase."""
    sched = store.subscription_schedules.get(sub.get("schedule") or "")
    if sched is None or sched["status"] != "active" or sub["status"] in models.ENDED:
        return []
    return [(sched["current_phase"]["end_date"], advance)]


def advance(store: Store, sub: dict) -> None:
    """The current phase ended: start the next one, or end the schedule by its ``end_behavior``."""
    sched = store.subscription_schedules[sub["schedule"]]
    end = sched["current_phase"]["end_date"]
    following = [phase for phase in sched["phases"] if phase["start_date"] == end]
    if not following:
        _complete(store, sched, sub)
        return
    before = public(sched)
    _start_phase(store, sched, sub, following[0])
    sched["current_phase"] = {"start_date": following[0]["start_date"], "end_date": following[0]["end_date"]}
    store.emit("subscription_schedule.updated", sched, before)


def _start_phase(store: Store, sched: dict, sub: dict, phase: dict) -> None:
    before = public(sub)
    kept = {item["price"]["id"]: item for item in sub["items"]["data"]}
    start, end = (min(item[name] for item in sub["items"]["data"])
                  for name in ("current_period_start", "current_period_end"))
    items = []
    for entry in phase["items"]:
        item = kept.get(entry["price"])
        if item is None:
            item = objects.subscription_item(store, sub["id"], store.prices[entry["price"]], entry["quantity"],
                                             start, end)
        elif entry["quantity"] is not None:
            item["quantity"] = entry["quantity"]
        items.append(item)
    sub["items"]["data"] = items
    reused = [entry["discount"] for entry in phase["discounts"] if entry["discount"]]
    discount_models.apply_discounts(store, sub, [{key: entry[key] for key in ("coupon", "promotion_code") if entry[key]}
                                                 for entry in phase["discounts"] if not entry["discount"]])
    sub["discounts"] = reused + sub["discounts"]
    sub["default_payment_method"] = phase["default_payment_method"] \
        or sched["default_settings"]["default_payment_method"]
    sub["automatic_tax"]["enabled"] = phase["automatic_tax"]["enabled"]
    if phase["metadata"]:
        merge_metadata(sub, phase["metadata"])
    store.emit("customer.subscription.updated", sub, before)


def _complete(store: Store, sched: dict, sub: dict) -> None:
    if sched["end_behavior"] == "release":
        models.release(store, sched, sub)
        return
    sched.update(status="completed", completed_at=store.now(), current_phase=None)
    store.emit("subscription_schedule.completed", sched)
    cancel_now(store, sub, ended_at=store.now())
