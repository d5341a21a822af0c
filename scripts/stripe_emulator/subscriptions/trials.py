"""Free trials: how they start (https://docs.stripe.com/billing/subscriptions/trials).

A subscription created with ``trial_period_days`` is ``trialing`` until ``trial_end`` (its first
period), with a zero invoice. With ``payment_behavior=default_incomplete`` it also gets a
``pending_setup_intent`` whose client secret collects the card for later. How a trial ends is
``renewals.py``'s.
"""

from __future__ import annotations

from ..core.store import Store, StripeError
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
