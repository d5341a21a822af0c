"""Free trials: how they start, how they end without a card, and resuming what they paused.

A subscription created with ``trial_period_days`` is ``trialing`` until ``trial_end`` (its first
period), with a zero invoice. With ``payment_behavior=default_incomplete`` it also gets a
``pending_setup_intent`` whose client secret collects the card for later
(https://docs.stripe.com/billing/subscriptions/trials). When the trial ends the card on file pays
the first period (``lifecycle.renew``); without one, ``trial_settings.end_behavior
.missing_payment_method`` decides: ``create_invoice`` (the default: the invoice is left open and
the subscription is ``past_due``), ``pause`` (status ``paused``, no invoice,
``customer.subscription.paused``) or ``cancel``. ``POST /v1/subscriptions/{id}/resume`` starts a
paused subscription again: a new period from now, invoiced and charged to its default method;
paid it is ``active``, declined ``past_due`` (https://docs.stripe.com/billing/subscriptions/pause-payment
#resume). The caller holds the store lock.
"""

from __future__ import annotations

from . import billing, dunning, objects, setup_intents
from .state import Store, StripeError, public

END_BEHAVIORS = ("cancel", "create_invoice", "pause")


def start_trial(store: Store, sub: dict, params: dict, behavior: str) -> None:
    """Apply ``trial_settings`` and, for ``default_incomplete``, create the pending SetupIntent."""
    end = ((params.get("trial_settings") or {}).get("end_behavior") or {}).get("missing_payment_method")
    if end is not None:
        if end not in END_BEHAVIORS:
            raise StripeError(400, f"Invalid missing_payment_method: must be one of {', '.join(END_BEHAVIORS)}",
                              param="trial_settings[end_behavior][missing_payment_method]")
        sub["trial_settings"]["end_behavior"]["missing_payment_method"] = end
    if behavior == "default_incomplete":
        seti = setup_intents.create(store, {"customer": sub["customer"], "usage": "off_session"},
                                    subscription_id=sub["id"])
        sub["pending_setup_intent"] = seti["id"]


def end_without_method(store: Store, sub: dict) -> bool:
    """End a trial that has no method to charge as its settings say; ``False`` when it renews as usual."""
    if sub["status"] != "trialing" or dunning.paying_method(store, sub) is not None:
        return False
    behavior = sub["trial_settings"]["end_behavior"]["missing_payment_method"]
    if behavior == "cancel":
        billing.cancel_now(store, sub, ended_at=sub["trial_end"])
        return True
    if behavior == "pause":
        before = public(sub)
        sub["status"] = "paused"
        store.emit("customer.subscription.updated", sub, before)
        store.emit("customer.subscription.paused", sub)
        return True
    return False


def resume(store: Store, sub: dict, params: dict) -> dict:
    """``POST /v1/subscriptions/{id}/resume``: a new period from now, invoiced and charged at once."""
    if sub["status"] != "paused":
        raise StripeError(400, f"Only a paused subscription can be resumed; this one is {sub['status']}.")
    if (params.get("billing_cycle_anchor") or {}).get("type", "now") != "now":
        raise StripeError(400, "The emulator resumes with billing_cycle_anchor=now only.",
                          param="billing_cycle_anchor")
    before = public(sub)
    now = store.now()
    rec = sub["items"]["data"][0]["price"]["recurring"]
    end = objects.add_interval(now, rec["interval"], rec["interval_count"])
    for item in sub["items"]["data"]:
        item["current_period_start"], item["current_period_end"] = now, end
    sub["billing_cycle_anchor"] = now
    inv = billing.open_invoice(store, sub, "subscription_cycle", now, end)
    billing.finalize(store, inv)
    pm = dunning.paying_method(store, sub)
    if inv["amount_due"] == 0:
        billing.mark_paid(store, inv)
        paid = True
    else:
        # Off-session: a card that needs authentication cannot be charged, as at a renewal.
        paid = billing.attempt(store, inv, pm, force_fail=billing.card_outcome(pm) == "requires_action") \
            == "succeeded"
    sub["status"] = "active" if paid else "past_due"
    store.emit("customer.subscription.updated", sub, before)
    store.emit("customer.subscription.resumed", sub)
    return sub
