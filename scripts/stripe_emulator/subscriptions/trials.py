"""Free trials: how they start (https://docs.stripe.com/billing/subscriptions/trials).

A subscription created with ``trial_period_days`` is ``trialing`` until ``trial_end`` (its first
period), with a zero invoice. With ``payment_behavior=default_incomplete`` it also gets a
``pending_setup_intent`` whose client secret collects the card for later. How a trial ends is
``renewals.py``'s.
"""

from __future__ import annotations

from ..core.store import Store, StripeError, public
from ..intents import setup_intents

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


def move_trial_end(store: Store, sub: dict, trial_end: int) -> None:
    """An update's numeric ``trial_end`` moves a trial's end (and its first period's) to that time
    (https://docs.stripe.com/billing/subscriptions/trials#extend-trials); ``rules.py`` has made sure it is in the
    future. A trial for a subscription not trialing (Stripe credits the period and starts one) is not modelled."""
    if sub["status"] != "trialing":
        raise StripeError(400, "The emulator does not model the parameter trial_end on a subscription that is not "
                          "trialing (only trial_end=now).", code="parameter_unsupported", param="trial_end")
    before = public(sub)
    sub["trial_end"] = trial_end
    for item in sub["items"]["data"]:
        item["current_period_end"] = trial_end
    store.emit("customer.subscription.updated", sub, before)
