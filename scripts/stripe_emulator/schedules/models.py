"""Subscription schedules: made from a subscription, their phases replaced, released (the rules; no HTTP).

Stripe's rules at the pinned API version, each from the page cited:

- One schedule per subscription: ``from_subscription`` of a subscription that has one is refused, and the
  subscription names its schedule in ``schedule``
  (https://docs.stripe.com/billing/subscriptions/subscription-schedules#managing: "a subscription can only
  have one schedule"; https://docs.stripe.com/api/subscriptions/object#subscription_object-schedule).
- ``from_subscription`` takes no other parameter ("When using this parameter, other parameters (such as
  phase values) cannot be set", https://docs.stripe.com/api/subscription_schedules/create#create_subscription_schedule-from_subscription):
  its one phase is the subscription as it is, from its current period's start to its end.
- Phases are contiguous: "the ``end_date`` of one phase will always equal the ``start_date`` of the next
  phase" (https://docs.stripe.com/api/subscription_schedules/update#update_subscription_schedule-phases); a phase
  lasts ``duration`` or to ``end_date``, never both ("If set, ``end_date`` must not be set"); ``iterations``
  is gone since 2025-09-30.clover (https://docs.stripe.com/changelog/clover/2025-09-30/remove-iterations), so
  the SDK types at the pinned version refuse it as an unknown parameter before this runs.
- Past phases may be omitted from an update; the current phase keeps its ``start_date``
  (https://docs.stripe.com/billing/subscriptions/subscription-schedules#updating).
- Releasing "will stop scheduling of its phases, but leave any existing subscription in place", only from
  ``not_started`` or ``active`` (https://docs.stripe.com/api/subscription_schedules/release).
- A subscription a schedule manages cannot change its cancellation directly: "updating any cancelation
  behavior directly is not allowed. Please update the schedule instead"
  (https://docs.stripe.com/billing/subscriptions/subscription-schedules#cancel-subscription-schedule).
- Cancelling the subscription ends its schedule: ``canceled``, or ``aborted`` when dunning ended it
  (https://docs.stripe.com/api/events/types#event_types-subscription_schedule.aborted).

The emulator changes the current phase's items only through the subscription: an update that gives the
current phase other items than the subscription has is refused (``parameter_unsupported``), so the rules of
item changes stay in one place (``subscriptions/prorations.py``). ``end_behavior`` is ``release`` or ``cancel``.
"""

from __future__ import annotations

from ..billing import periods
from ..core.store import Store, StripeError, merge_metadata, new_id, public
from ..customers import payment_methods
from ..discounts import models as discount_models
from ..products.models import metered, subscribable

ENDED = ("canceled", "incomplete_expired")
END_BEHAVIORS = ("release", "cancel")


def _unsupported(message: str, param: str) -> StripeError:
    return StripeError(400, f"The emulator does not model {message} (scripts/stripe_emulator/README.md).",
                       code="parameter_unsupported", param=param)


def _phase_item(item: dict) -> dict:
    price = item["price"]["id"]
    return {"billing_thresholds": None, "discounts": [], "metadata": {}, "plan": price, "price": price,
            "quantity": item.get("quantity"), "tax_rates": []}


def _phase(sub: dict, start: int, end: int, items: list[dict], discounts: list[dict], payment_method,
           automatic_tax: bool, metadata: dict) -> dict:
    return {"add_invoice_items": [], "application_fee_percent": None,
            "automatic_tax": {"disabled_reason": None, "enabled": automatic_tax, "liability": None},
            "billing_cycle_anchor": None, "billing_thresholds": None, "collection_method": None,
            "currency": sub["currency"], "default_payment_method": payment_method, "default_tax_rates": [],
            "description": None, "discounts": discounts, "end_date": end, "invoice_settings": None, "items": items,
            "metadata": metadata, "on_behalf_of": None, "proration_behavior": "create_prorations",
            "start_date": start, "transfer_data": None, "trial_end": None}


def _discount_entry(discount_id: str) -> dict:
    return {"coupon": None, "discount": discount_id, "promotion_code": None}


def from_subscription(store: Store, sub: dict) -> dict:
    """A schedule of ``sub`` as it is: one phase, its current period (see above)."""
    if sub["status"] in ENDED:
        raise StripeError(400, f"Subscription {sub['id']} is {sub['status']}.", param="from_subscription")
    if sub["schedule"]:
        raise StripeError(400, "You cannot migrate a subscription that is already attached to a schedule: "
                          f"`{sub['schedule']}`.", param="from_subscription")
    start, end = periods.period_start(sub), periods.period_end(sub)
    tax = sub["automatic_tax"]["enabled"]
    phase = _phase(sub, start, end, [_phase_item(item) for item in sub["items"]["data"]],
                   [_discount_entry(d) for d in sub["discounts"]], sub["default_payment_method"], tax, {})
    sched_id = new_id("sub_sched_")
    sched = {
        "id": sched_id, "object": "subscription_schedule", "application": None,
        "billing_mode": dict(sub["billing_mode"]), "canceled_at": None, "completed_at": None,
        "created": store.now(), "current_phase": {"start_date": start, "end_date": end},
        "customer": sub["customer"], "customer_account": None,
        "default_settings": {"application_fee_percent": None,
                             "automatic_tax": {"disabled_reason": None, "enabled": tax, "liability": None},
                             "billing_cycle_anchor": "automatic", "billing_thresholds": None,
                             "collection_method": "charge_automatically",
                             "default_payment_method": sub["default_payment_method"], "description": None,
                             "invoice_settings": {"account_tax_ids": None, "days_until_due": None,
                                                  "issuer": {"type": "self"}},
                             "on_behalf_of": None, "transfer_data": None},
        "end_behavior": "release", "livemode": False, "metadata": {}, "pause_schedules": [], "phases": [phase],
        "released_at": None, "released_subscription": None, "status": "active", "subscription": sub["id"],
        "test_clock": sub["test_clock"],
    }
    store.subscription_schedules[sched_id] = sched
    store.emit("subscription_schedule.created", sched)
    before = public(sub)
    sub["schedule"] = sched_id
    store.emit("customer.subscription.updated", sub, before)
    return sched


def _items(store: Store, sub: dict, entries: list, param: str) -> list[dict]:
    if not entries:
        raise StripeError(400, "Missing required param: items.", code="parameter_missing", param=f"{param}[items]")
    items = []
    for i, entry in enumerate(entries):
        price = subscribable(store, entry.get("price"), f"{param}[items][{i}][price]", sub["currency"])
        if metered(price) and entry.get("quantity") is not None:
            raise StripeError(400, "Quantity should not be specified where usage_type is `metered`.",
                              param=f"{param}[items][{i}][quantity]")
        # Stripe's default is 1; 0 is a quantity (a team down to no seats), not an absent one.
        quantity = None if metered(price) else 1 if entry.get("quantity") is None else int(entry["quantity"])
        items.append({**_phase_item({"price": price}), "quantity": quantity})
    return items


def _discounts(store: Store, sub: dict, entries, param: str) -> list[dict]:
    """A phase's ``discounts``: an existing discount of the customer reused, or a coupon or promotion code the
    customer may redeem (checked now, redeemed when the phase starts)."""
    found = []
    for i, entry in enumerate(entries or []):
        name = f"{param}[discounts][{i}]"
        if entry.get("discount"):
            discount = store.get("discounts", entry["discount"], f"{name}[discount]")
            if discount["customer"] != sub["customer"]:
                raise StripeError(400, f"No such discount: '{entry['discount']}'", param=f"{name}[discount]")
            found.append(_discount_entry(discount["id"]))
        else:
            discount_models.entry_terms(store, entry, sub["customer"], name)
            found.append({"coupon": entry.get("coupon"), "discount": None,
                          "promotion_code": entry.get("promotion_code")})
    return found


def _end(entry: dict, start: int, items: list, store: Store, last: bool, param: str) -> int:
    if entry.get("duration") and entry.get("end_date") is not None:
        raise StripeError(400, "You may only specify one of these parameters: duration, end_date.", param=param)
    if entry.get("duration"):
        end = periods.add_interval(start, entry["duration"]["interval"], entry["duration"].get("interval_count") or 1)
    elif entry.get("end_date") is not None:
        end = store.now() if entry["end_date"] == "now" else entry["end_date"]
    elif last:  # the last phase lasts one interval of its first price by default
        recurring = store.prices[items[0]["price"]]["recurring"]
        end = periods.add_interval(start, recurring["interval"], recurring["interval_count"])
    else:
        raise StripeError(400, "Every phase but the last needs an end_date or a duration.", param=f"{param}[end_date]")
    if end <= start:
        raise StripeError(400, "A phase's end must be after its start_date.", param=f"{param}[end_date]")
    return end


def _current_items_kept(sub: dict, items: list[dict], param: str) -> None:
    now_on = sorted((item["price"]["id"], item.get("quantity")) for item in sub["items"]["data"])
    if sorted((item["price"], item["quantity"]) for item in items) != now_on:
        raise _unsupported("changing the current phase's items: change the subscription's", f"{param}[items]")


def phases_of(store: Store, sched: dict, sub: dict, entries: list) -> list[dict]:
    """The phases an update's ``phases`` make, from the current phase on; Stripe's 400 for the first rule broken."""
    start = sched["current_phase"]["start_date"]
    made = []
    for i, entry in enumerate(entries):
        param = f"phases[{i}]"
        given = store.now() if entry.get("start_date") == "now" else entry.get("start_date")
        if given is not None and given != start:
            message = ("You can not modify the start date of the current phase." if i == 0 else
                       "Phases must be contiguous: the start_date of a phase is the end_date of the one before it.")
            raise StripeError(400, message, param=f"{param}[start_date]")
        items = _items(store, sub, entry.get("items"), param)
        if i == 0:
            _current_items_kept(sub, items, param)
        end = _end(entry, start, items, store, i == len(entries) - 1, param)
        pm = entry.get("default_payment_method")
        pm = payment_methods.customer_pm(store, sub["customer"], pm, f"{param}[default_payment_method]") if pm else None
        tax = bool((entry.get("automatic_tax") or {}).get("enabled"))
        made.append(_phase(sub, start, end, items, _discounts(store, sub, entry.get("discounts"), param), pm, tax,
                           dict(entry.get("metadata") or {})))
        start = end
    return made


def update(store: Store, sched: dict, sub: dict, params: dict) -> dict:
    """``POST /v1/subscription_schedules/{id}``: phases replaced (from the current one), end behavior, metadata."""
    if sched["status"] != "active":
        raise StripeError(400, f"You cannot update a subscription schedule that is {sched['status']}.")
    behavior = params.get("end_behavior")
    if behavior is not None and behavior not in END_BEHAVIORS:
        raise _unsupported(f"end_behavior={behavior}", "end_behavior")
    phases = phases_of(store, sched, sub, params["phases"]) if params.get("phases") else None
    before = public(sched)
    if phases is not None:
        sched["phases"] = phases
        sched["current_phase"] = {"start_date": phases[0]["start_date"], "end_date": phases[0]["end_date"]}
    if behavior is not None:
        sched["end_behavior"] = behavior
    if "metadata" in params:
        merge_metadata(sched, params["metadata"])
    store.emit("subscription_schedule.updated", sched, before)
    return sched


def release(store: Store, sched: dict, sub: dict | None) -> dict:
    """``POST /v1/subscription_schedules/{id}/release``: the subscription stays as it is, without its schedule."""
    if sched["status"] not in ("not_started", "active"):
        raise StripeError(400, f"You cannot release a subscription schedule that is currently in the "
                          f"`{sched['status']}` status. It must be in `not_started` or `active`.")
    sched.update(status="released", released_at=store.now(), released_subscription=sched["subscription"],
                 subscription=None, current_phase=None)
    if sub is not None:
        before = public(sub)
        sub["schedule"] = None
        store.emit("customer.subscription.updated", sub, before)
    store.emit("subscription_schedule.released", sched)
    return sched


def check_subscription_update(sub: dict, params: dict) -> None:
    """Refuse a direct change of the cancellation of a subscription its schedule manages (see above)."""
    if sub.get("schedule") and ({"cancel_at_period_end", "cancel_at"} & set(params)):
        raise StripeError(400, f"The subscription is managed by the subscription schedule `{sub['schedule']}`, and "
                          "updating any cancelation behavior directly is not allowed. Please update the schedule "
                          "instead.")


def subscription_ended(store: Store, sub: dict) -> None:
    """The subscription was cancelled: its active schedule ends with it (``canceled``, or ``aborted`` by dunning)."""
    sched = store.subscription_schedules.get(sub.get("schedule") or "")
    if sched is None or sched["status"] != "active":
        return
    sched.update(status="canceled", canceled_at=store.now(), current_phase=None)
    aborted = sub["cancellation_details"]["reason"] == "payment_failed"
    store.emit("subscription_schedule.aborted" if aborted else "subscription_schedule.canceled", sched)
