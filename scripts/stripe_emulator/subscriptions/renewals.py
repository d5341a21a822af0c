"""The passage of time for one subscription: renewals, trial ends, expiries, cancellations, resuming.

``due(store, sub)`` lists what falls due for a subscription and when; the clock
(``test_clocks/models.py``) runs each in time order. When a trial ends the card on file pays the
first period; without one, ``trial_settings.end_behavior.missing_payment_method`` decides:
``create_invoice`` (the default: the invoice is left open and the subscription is ``past_due``),
``pause`` (status ``paused``, no invoice, ``customer.subscription.paused``) or ``cancel``.
``POST /v1/subscriptions/{id}/resume`` starts a paused subscription again: a new period from now,
invoiced and charged to its default method; paid it is ``active``, declined ``past_due``
(https://docs.stripe.com/billing/subscriptions/pause-payment#resume). The caller holds the lock.
"""

from __future__ import annotations

from ..billing import cards, invoicing, periods
from ..billing.objects import period_lines
from ..core.store import Store, StripeError, public
from ..schedules import phases as schedule_phases
from . import dunning, pending, prorations, usage
from .models import cancel_now

# Stripe moves a subscription whose first invoice is still unpaid to incomplete_expired.
INCOMPLETE_EXPIRY_SECONDS = 23 * 3600


def _due_at(sub: dict) -> int | None:
    if sub["status"] == "incomplete":
        return sub["created"] + INCOMPLETE_EXPIRY_SECONDS
    if sub["status"] not in ("active", "past_due", "trialing", "unpaid"):
        return None
    due = periods.period_end(sub)
    return min(due, sub["cancel_at"]) if sub["cancel_at"] else due


def due(store: Store, sub: dict) -> list[tuple[int, object]]:
    due = _due_at(sub)
    # A pending update that expires at the period's end does so before the renewal, which bills the items as they are;
    # a schedule's phase that starts then changes them before it too, so the renewal bills the new phase's.
    return schedule_phases.due(store, sub) + pending.due(sub) + ([(due, process_due)] if due is not None else []) \
        + dunning.due(store, sub)


def process_due(store: Store, sub: dict) -> None:
    if sub["status"] == "incomplete":
        before = public(sub)
        sub["status"] = "incomplete_expired"
        inv = store.invoices.get(sub["latest_invoice"] or "")
        if inv and inv["status"] == "open":
            invoicing.void(store, inv)
        store.emit("customer.subscription.updated", sub, before)
    elif sub["cancel_at"] and sub["cancel_at"] <= periods.period_end(sub):
        cancel_now(store, sub, ended_at=sub["cancel_at"])
    elif not end_without_method(store, sub):
        renew(store, sub)


def renew(store: Store, sub: dict) -> None:
    """Start the next period: invoice it and charge the default payment method."""
    before = public(sub)
    old_start, start = periods.period_start(sub), periods.period_end(sub)
    rec = sub["items"]["data"][0]["price"]["recurring"]
    end = periods.add_interval(start, rec["interval"], rec["interval_count"])
    for item in sub["items"]["data"]:
        item["current_period_start"], item["current_period_end"] = start, end
    if sub["status"] == "trialing":
        sub["status"] = "active"
    inv = invoicing.open_invoice(store, sub, "subscription_cycle", start, end,
                               lines=prorations.take_prorations(sub) + period_lines(sub, start, end)
                               + usage.usage_lines(store, sub, old_start, start))
    inv["period_start"], inv["period_end"] = old_start, start
    store.emit("customer.subscription.updated", sub, before)
    invoicing.finalize(store, inv)
    if invoicing.nothing_to_charge(inv):
        invoicing.mark_paid(store, inv)
        return
    pm = cards.paying_method(store, sub)
    force_fail = sub["id"] in store.fail_next_renewal
    store.fail_next_renewal.discard(sub["id"])
    # A card that needs authentication cannot be charged off-session: it fails too.
    status = invoicing.attempt(store, inv, pm, force_fail=force_fail
                             or cards.card_outcome(pm) == "requires_action")
    before = public(sub)
    if status == "succeeded":
        sub["status"] = "active"
    elif sub["status"] != "unpaid":
        sub["status"] = "past_due"
    store.emit("customer.subscription.updated", sub, before)


def end_without_method(store: Store, sub: dict) -> bool:
    """End a trial that has no method to charge as its settings say; ``False`` when it renews as usual."""
    if sub["status"] != "trialing" or cards.paying_method(store, sub) is not None:
        return False
    behavior = sub["trial_settings"]["end_behavior"]["missing_payment_method"]
    if behavior == "cancel":
        cancel_now(store, sub, ended_at=sub["trial_end"])
        return True
    if behavior == "pause":
        before = public(sub)
        sub["status"] = "paused"
        store.emit("customer.subscription.updated", sub, before)
        store.emit("customer.subscription.paused", sub)
        return True
    return False


def _start_period_now(store: Store, sub: dict) -> None:
    """A new period from now, invoiced and charged at once off-session: ``active`` if paid, else ``past_due``."""
    now = store.now()
    rec = sub["items"]["data"][0]["price"]["recurring"]
    end = periods.add_interval(now, rec["interval"], rec["interval_count"])
    for item in sub["items"]["data"]:
        item["current_period_start"], item["current_period_end"] = now, end
    sub["billing_cycle_anchor"] = now
    inv = invoicing.open_invoice(store, sub, "subscription_cycle", now, end)
    invoicing.finalize(store, inv)
    pm = cards.paying_method(store, sub)
    if invoicing.nothing_to_charge(inv):
        invoicing.mark_paid(store, inv)
        paid = True
    else:
        # Off-session: a card that needs authentication cannot be charged, as at a renewal.
        paid = invoicing.attempt(store, inv, pm, force_fail=cards.card_outcome(pm) == "requires_action") \
            == "succeeded"
    sub["status"] = "active" if paid else "past_due"


def end_trial_now(store: Store, sub: dict) -> None:
    """An update's ``trial_end=now`` (https://docs.stripe.com/billing/subscriptions/trials#end-trial-early):
    the trial ends at once and the first period starts now, invoiced and charged to the default method."""
    if sub["status"] != "trialing":
        return
    before = public(sub)
    sub["trial_end"] = store.now()
    _start_period_now(store, sub)
    store.emit("customer.subscription.updated", sub, before)


def resume(store: Store, sub: dict, params: dict) -> dict:
    """``POST /v1/subscriptions/{id}/resume``: a new period from now, invoiced and charged at once."""
    if sub["status"] != "paused":
        raise StripeError(400, f"Only a paused subscription can be resumed; this one is {sub['status']}.")
    # At 2026-10-28.endive the anchor is an object, ``{"type": "now"}`` (the default) or ``unchanged``.
    if (params.get("billing_cycle_anchor") or {"type": "now"})["type"] != "now":
        raise StripeError(400, "The emulator resumes with billing_cycle_anchor[type]=now only.",
                          param="billing_cycle_anchor[type]")
    before = public(sub)
    _start_period_now(store, sub)
    store.emit("customer.subscription.updated", sub, before)
    store.emit("customer.subscription.resumed", sub)
    return sub
