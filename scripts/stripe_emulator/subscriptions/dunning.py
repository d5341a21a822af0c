"""What happens after a renewal fails, and before a trial ends, as the clock advances.

Stripe retries a failed subscription invoice on the account's schedule
(https://docs.stripe.com/billing/revenue-recovery/smart-retries#custom-retry-schedule); this
emulator uses one fixed custom schedule (``billing.invoicing.RETRY_DELAYS``): retries 3, 5 and 7 days
after the previous attempt, ``invoice.next_payment_attempt`` giving the next one (null after
the last). When the last retry
fails the subscription becomes ``unpaid`` (one of the outcomes Stripe offers; the others,
cancelling or leaving it past due, are not emulated). Three days before a trial ends Stripe
sends ``customer.subscription.trial_will_end``. The caller holds the store lock.
"""

from __future__ import annotations

from ..billing import cards, invoicing
from ..core.store import Store, public

DAY = 86400

TRIAL_WILL_END_NOTICE = 3 * DAY


def _open_renewal(store: Store, sub: dict) -> dict | None:
    inv = store.invoices.get(sub["latest_invoice"] or "")
    if inv and inv["status"] == "open" and inv["next_payment_attempt"] is not None:
        return inv
    return None


def due(store: Store, sub: dict) -> list[tuple[int, object]]:
    """The ``(time, action)`` pairs of this module falling due for ``sub``; ``action(store, sub)``."""
    pending = []
    if sub["status"] in ("past_due", "unpaid") and (inv := _open_renewal(store, sub)):
        pending.append((inv["next_payment_attempt"], retry))
    if sub["status"] == "trialing" and sub["trial_end"] and sub.get("_trial_notice_for") != sub["trial_end"]:
        pending.append((sub["trial_end"] - TRIAL_WILL_END_NOTICE, trial_will_end))
    return pending


def retry(store: Store, sub: dict) -> None:
    """Charge the open renewal invoice again; paid -> active, out of retries -> unpaid."""
    inv = store.invoices[sub["latest_invoice"]]
    status = invoicing.attempt(store, inv, cards.paying_method(store, sub))
    before = public(sub)
    if status == "succeeded":
        sub["status"] = "active"
    elif inv["next_payment_attempt"] is None:
        sub["status"] = "unpaid"
    store.emit("customer.subscription.updated", sub, before)


def trial_will_end(store: Store, sub: dict) -> None:
    # Once per trial end: a trial extended later is announced again.
    sub["_trial_notice_for"] = sub["trial_end"]
    store.emit("customer.subscription.trial_will_end", sub)
