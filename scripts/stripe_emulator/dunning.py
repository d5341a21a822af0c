"""What happens after a renewal fails, and before a trial ends, as the clock advances.

Stripe retries a failed subscription invoice on the account's schedule
(https://docs.stripe.com/billing/revenue-recovery/smart-retries#custom-retry-schedule); this
emulator uses one fixed custom schedule (``billing.RETRY_DELAYS``): retries 3, 5 and 7 days
after the previous attempt, ``invoice.next_payment_attempt`` giving the next one (null after
the last). When the last retry
fails the subscription becomes ``unpaid`` (one of the outcomes Stripe offers; the others,
cancelling or leaving it past due, are not emulated). Three days before a trial ends Stripe
sends ``customer.subscription.trial_will_end``. ``POST /v1/invoices/{id}/pay`` (``pay_invoice``)
pays an open invoice at once, as Stripe's Invoice.pay does, say after the customer added a card.
The caller holds the store lock.
"""

from __future__ import annotations

from . import billing
from .state import Store, StripeError, public

DAY = 86400
TRIAL_WILL_END_NOTICE = 3 * DAY


def paying_method(store: Store, sub: dict) -> dict | None:
    """The method Stripe charges: the subscription's default, else the customer's."""
    cus = store.customers.get(sub["customer"]) or {}
    pm_id = sub["default_payment_method"] or \
        (cus.get("invoice_settings") or {}).get("default_payment_method")
    return store.payment_methods.get(pm_id or "")


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
    status = billing.attempt(store, inv, paying_method(store, sub))
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


def pay_invoice(store: Store, inv: dict, pm_id: str | None) -> dict:
    """Charge the open invoice ``inv`` now, off-session: ``pm_id``, else its subscription's method.

    Paid, its subscription recovers (``active``) or its pending update applies; declined (a card
    needing authentication too: no one is there to authenticate) it is a 402 card error, after
    ``invoice.payment_failed``. ``pm_id`` must belong to the invoice's customer.
    """
    if inv["status"] != "open":
        raise StripeError(400, f"This invoice is {inv['status']} and cannot be paid.",
                          code="invoice_unexpected_state")
    sub = store.subscriptions.get(inv["parent"]["subscription_details"]["subscription"] or "")
    if pm_id:
        pm = store.payment_methods[billing.customer_pm(store, inv["customer"], pm_id, "payment_method")]
    else:
        pm = paying_method(store, sub) if sub is not None else None
    if pm is None:
        raise StripeError(400, "This customer has no attached payment source or default payment method.",
                          code="resource_missing")
    if inv["amount_due"] == 0:
        billing.mark_paid(store, inv)
        status = "succeeded"
    else:
        status = billing.attempt(store, inv, pm, force_fail=billing.card_outcome(pm) == "requires_action")
    if status != "succeeded":
        raise billing.decline_error(store, store.payment_intents.get(inv["_payment_intent"] or ""), pm)
    billing.after_payment(store, inv, pm)
    return inv
