"""Plan changes at the period's end through a Stripe subscription schedule (CONTRACT "Plan changes at the period's
end").

A period-end swap makes (or, when it is the service's, replaces the phases of) a schedule from the subscription:
the current phase as it is until the period's end, then the new price for one of its intervals (``duration``:
the pinned API version refuses ``iterations``, https://docs.stripe.com/changelog/clover/2025-09-30/remove-iterations),
``end_behavior=release`` so that the subscription goes on at the new price after it, and
``metadata[managed_by]=subscription-service``. A phase's discounts replace the subscription's when it starts, so the
next phase carries the subscription's discounts, and its tax setting, default payment method, seats and the new
plan's metered prices (https://docs.stripe.com/billing/subscriptions/subscription-schedules#transitioning). Nothing is
invoiced now: the renewal at the period's end bills the new price. A schedule the service did not make is shown
but never changed or released (``ScheduleNotOurs``). Each call takes the billable's lock (as every change does),
writes Stripe's answer, and never commits.
"""
from flask import current_app

from app import presentation
from app.billing import objects, prices, schedules
from app.billing.provider import get_provider
from app.errors import Conflict
from app.idempotency import provider_key
from app.subscription import current
from app.subscription.errors import ChangeScheduled, NotSubscribed, ScheduleNotOurs
from app.subscription.management import present_line
from app.usage import plans as usage_plans


def refuse_while_scheduled(billable):
    """Raise ``ChangeScheduled`` (409) while the billable's live subscription has a plan change scheduled."""
    subscription = current.live_subscription(current.locked_subscriptions(billable))
    change = subscription.scheduled_change if subscription is not None else None
    if change and change.get("price"):
        raise ChangeScheduled.for_change(change)


def refuse_seats_under_foreign_schedule(billable):
    """Raise ``ScheduleNotOurs`` (409) while a schedule made elsewhere (the portal's downgrade, the Dashboard) manages
    the billable's live subscription: its next phase keeps the seats it was made with, and ``follow_seats`` never
    changes another's schedule, so seats bought now would not be billed from the phase's start. Stripe is asked
    (the subscription, and its schedule when it names one: at most two calls), not the stored ``scheduled_change``:
    a portal's schedule may be seconds old, its webhook still to come, and one released since may still be stored."""
    subscription = current.live_subscription(current.locked_subscriptions(billable))
    if subscription is not None:
        provider = get_provider()
        _own_schedule(provider, provider.retrieve_subscription(subscription.provider_id))


def _phase_items(live_items):
    return [{"price": objects.price_of(item), "quantity": item["quantity"]} if not objects.is_metered(item)
            else {"price": objects.price_of(item)} for item in live_items]


def _carried(live):
    """What every phase keeps of the live subscription: its discounts, tax setting and default payment method."""
    carried = {"discounts": [{"discount": objects.ref_id(d)} for d in live.get("discounts") or () if objects.ref_id(d)],
               "automatic_tax": {"enabled": bool((live.get("automatic_tax") or {}).get("enabled"))}}
    payment_method = objects.ref_id(live.get("default_payment_method"))
    if payment_method:
        carried["default_payment_method"] = payment_method
    return carried


def _own_schedule(provider, live):
    """The live subscription's schedule when it is the service's, else ``None``; ``ScheduleNotOurs`` for another's."""
    schedule_id = objects.ref_id(live.get("schedule"))
    if not schedule_id:
        return None
    schedule = provider.retrieve_subscription_schedule(schedule_id)
    if schedule.get("status") not in schedules.RUNNING:
        return None
    if not schedules.is_ours(schedule):
        raise ScheduleNotOurs()
    return schedule


def _phases(provider, live, schedule, price):
    """The two phases of a change to ``price``: the current phase as it is, then ``price`` for one of its intervals."""
    start, end = schedule["current_phase"]["start_date"], schedule["current_phase"]["end_date"]
    items = objects.items_of(live)
    quantity = next(item["quantity"] for item in items if not objects.is_metered(item))
    terms = prices.terms(provider, price)
    carried = _carried(live)
    # The current phase ends where Stripe says it does: a period can be shorter than an interval (a trial's).
    return [{"start_date": start, "end_date": end, "items": _phase_items(items), **carried},
            {"items": [{"price": price, "quantity": quantity}, *({"price": m} for m in usage_plans.metered_for(price))],
             "duration": {"interval": terms["interval"], "interval_count": terms["interval_count"] or 1}, **carried}]


def swap_at_period_end(billable, price):
    """Schedule the billable's live subscription to move to ``price`` when its period ends; return
    ``(Subscription, scheduled_change)``. A second one replaces the first; the current price schedules nothing and
    withdraws a change scheduled. Raises ``UnknownPrice`` (422), ``NotSubscribed`` / ``SubscriptionPastDue`` /
    ``PaymentPending`` / ``ScheduleNotOurs`` / ``Conflict`` (a cancellation is scheduled) (409),
    ``ProviderRejected`` (502), ``ProviderUnavailable`` (503).
    """
    subscription = current.priced(billable)
    current.refuse_while_pending(billable, subscription)
    provider = get_provider()
    live = provider.retrieve_subscription(subscription.provider_id)
    if live.get("cancel_at_period_end") or live.get("cancel_at"):
        raise Conflict("The subscription ends at the period's end: resume it (POST /subscription/resume) first.")
    schedule = _own_schedule(provider, live)
    if subscription.provider_price == price:  # staying on the current price: a change scheduled is withdrawn
        if schedule is not None:
            provider.release_subscription_schedule(schedule["id"], provider_key(billable, "withdraw"))
        row = current.write(billable, live)
        schedules.write(row, None)
        return row, None
    if schedule is None:
        schedule = provider.schedule_subscription(subscription.provider_id, provider_key(billable, "schedule"))
    schedule = provider.update_subscription_schedule(schedule["id"], {
        "phases": _phases(provider, live, schedule, price), "end_behavior": "release",
        "metadata": schedules.MANAGED_BY, "proration_behavior": "none"}, provider_key(billable, "schedule-phases"))
    row = current.write(billable, live)
    schedules.write(row, schedule)
    return row, presentation.present_scheduled_change(row)


def withdraw(billable):
    """Withdraw the plan change scheduled for the billable's live subscription (release the schedule); return the row.

    Nothing scheduled: answered as it is. Raises ``NotSubscribed`` / ``ScheduleNotOurs`` (409), ``ProviderRejected``
    (502), ``ProviderUnavailable`` (503).
    """
    subscription = current.changeable(billable)
    provider = get_provider()
    live = provider.retrieve_subscription(subscription.provider_id)
    schedule = _own_schedule(provider, live)
    if schedule is not None:
        provider.release_subscription_schedule(schedule["id"], provider_key(billable, "withdraw"))
    schedules.write(subscription, None)
    return subscription


def release_before_cancel(billable):
    """Release the service's schedule of the billable's live subscription, which Stripe requires before a
    cancellation at the period's end ("updating any cancelation behavior directly is not allowed",
    https://docs.stripe.com/billing/subscriptions/subscription-schedules). Raises ``ScheduleNotOurs`` (409) for
    another's; nothing without a live subscription (the cancellation answers that).
    """
    subscription = current.live_subscription(current.locked_subscriptions(billable))
    if subscription is None:
        return
    provider = get_provider()
    schedule = _own_schedule(provider, provider.retrieve_subscription(subscription.provider_id))
    if schedule is not None:
        provider.release_subscription_schedule(schedule["id"], provider_key(billable, "release-for-cancel"))
        schedules.write(subscription, None)


def follow_seats(billable, subscription_row, quantity):
    """Set the seats of every phase of the service's schedule of ``subscription_row`` to ``quantity``, after the
    subscription's own seats changed to it (the current phase must match the subscription); return the schedule, or
    ``None`` when there is nothing to follow (no schedule, or another's, which is never changed).

    For ``app.organizations.seats.change_seats``: seats follow members across a scheduled change. One read, and one
    update when a schedule of the service's runs. Raises ``ProviderRejected`` (502), ``ProviderUnavailable`` (503).
    """
    stored = subscription_row.scheduled_change
    if not stored or not stored.get("ours"):
        return None
    provider = get_provider()
    schedule = provider.retrieve_subscription_schedule(stored["schedule"])
    if schedule.get("status") not in schedules.RUNNING or not schedules.is_ours(schedule):
        schedules.write(subscription_row, schedule)
        return None
    start = schedule["current_phase"]["start_date"]
    phases = [phase for phase in schedule["phases"] if phase["end_date"] > start]
    schedule = provider.update_subscription_schedule(schedule["id"], {
        "phases": [_reseated(phase, quantity, i == 0) for i, phase in enumerate(phases)],
        "proration_behavior": "none"}, provider_key(billable, f"schedule-seats-{quantity}"))
    schedules.write(subscription_row, schedule)
    return schedule


def _reseated(phase, quantity, first):
    """A phase as Stripe returned it, given back with ``quantity`` seats on its licensed items."""
    items = [{"price": objects.ref_id(item["price"]), "quantity": quantity} if item.get("quantity") is not None
             else {"price": objects.ref_id(item["price"])} for item in phase["items"]]
    found = {"items": items, "end_date": phase["end_date"],
             "discounts": [{key: value for key, value in entry.items() if value} for entry in phase.get("discounts")
                           or ()],
             "automatic_tax": {"enabled": bool((phase.get("automatic_tax") or {}).get("enabled"))}}
    if first:
        found["start_date"] = phase["start_date"]
    if phase.get("default_payment_method"):
        found["default_payment_method"] = objects.ref_id(phase["default_payment_method"])
    return found


def preview_at_period_end(billable, price):
    """Return Stripe's preview of the first invoice at ``price`` after the period's end, as ``management.preview_swap``
    shapes it (``proration_date`` null: nothing is prorated). Raises as ``swap_at_period_end``."""
    subscription = current.priced(billable, lock=False)
    item = subscription.licensed_items[0]
    details = {"items": [{"id": item.provider_id, "price": price}, *usage_plans.swap_items(subscription.items, price)],
               "proration_behavior": "none"}
    invoice = get_provider().preview_invoice(subscription.provider_id, details,
                                             automatic_tax=current_app.config["PROVIDER_AUTOMATIC_TAX"])
    if invoice is None:
        raise NotSubscribed("The subscription will not renew, so a change at its end has nothing to preview.")
    return {"amount_due": invoice.get("amount_due"), "currency": invoice.get("currency"),
            **presentation.totals_of(invoice),
            "proration_date": None, "lines": [present_line(line) for line in objects.list_data(invoice.get("lines"))]}
