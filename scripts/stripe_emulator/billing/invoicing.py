"""Invoicing steps shared by subscriptions, invoices and the clock: open, finalize, charge, mark paid.

Each function mutates the store (the caller holds the lock) and emits the events Stripe would emit
for the same change, in the order Stripe announces them.
"""

from __future__ import annotations

from ..core.store import Store, new_id, public
from . import cards, objects, tax

# Retries of a failed renewal, each after the previous attempt (``subscriptions/dunning.py`` runs them).
RETRY_DELAYS = (3 * 86400, 5 * 86400, 7 * 86400)

# Stripe's minimum charge per currency, in minor units (https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts).
# "When the amount due on an invoice is less than the minimum chargeable amount the invoice is marked as paid
# and the amount owed moved to the invoice balance as a debit" (https://docs.stripe.com/billing/customer/balance),
# which the next invoice collects. A currency not listed here is charged whatever its amount.
MINIMUM_CHARGE = {"usd": 50, "eur": 50, "gbp": 30, "cad": 50, "aud": 50, "nzd": 50, "sgd": 50, "chf": 50, "brl": 50,
                  "inr": 50, "jpy": 50, "dkk": 250, "nok": 300, "sek": 300, "pln": 200, "ron": 200, "bgn": 100,
                  "aed": 200, "myr": 200, "hkd": 400, "mxn": 1000, "thb": 1000, "czk": 1500, "huf": 17500}


def below_minimum(inv: dict) -> bool:
    """Whether ``inv`` is due something, but less than Stripe's minimum charge in its currency (see above)."""
    return 0 < inv["amount_due"] < MINIMUM_CHARGE.get(inv["currency"], 0)


def open_invoice(store: Store, sub: dict, reason: str, start: int, end: int,
                 lines: list[dict] | None = None) -> dict:
    """Create a draft subscription invoice (``finalize`` opens it): ``lines``, else the period's charge."""
    inv = objects.invoice(store, sub, reason, start, end, lines=lines)
    tax.finalize_without_location(inv, sub)
    store.invoices[inv["id"]] = inv
    sub["latest_invoice"] = inv["id"]
    used = [*inv["discounts"], *(line["_discount"] for line in inv["lines"]["data"] if line.get("_discount"))]
    for discount_id in dict.fromkeys(used):
        discount = store.discounts.get(discount_id)
        if discount is not None and store.coupons[discount["source"]["coupon"]]["duration"] == "once":
            # Used up by this invoice: Stripe takes it off the subscription.
            discount["_used"] = True
            sub["discounts"] = [d for d in sub["discounts"] if d != discount_id]
    return inv


def finalize(store: Store, inv: dict) -> None:
    """Open the draft ``inv``: numbered, its PaymentIntent made when something is due, and the customer's
    balance moved to the invoice's ``ending_balance`` (``objects.apply_balance``)."""
    store.emit("invoice.created", inv)
    below = below_minimum(inv)
    if below:  # not charged: its amount is carried on the customer's balance, as a debit (see above)
        inv["ending_balance"] = inv["amount_due"]
    cus = store.customers.get(inv["customer"]) or {}
    if cus and cus.get("balance", 0) != inv["ending_balance"]:
        before = public(cus)
        cus["balance"] = inv["ending_balance"]
        store.emit("customer.updated", cus, before)
    seq = cus.get("next_invoice_sequence", 1)
    if cus:
        cus["next_invoice_sequence"] = seq + 1
    inv["number"] = f"{cus.get('invoice_prefix', 'EMUL')}-{seq:04d}"
    inv["status"] = "open"
    inv["hosted_invoice_url"] = f"{store.base_url}/invoice/{inv['id']}"
    inv["invoice_pdf"] = f"{store.base_url}/invoice/{inv['id']}/pdf"
    inv["status_transitions"]["finalized_at"] = store.now()
    inv["effective_at"] = store.now()
    if inv["amount_due"] > 0 and not below:
        pi = objects.payment_intent(store, inv)
        store.payment_intents[pi["id"]] = pi
        inv["_payment_intent"] = pi["id"]
    store.emit("invoice.finalized", inv)
    if inv["_payment_intent"]:
        store.emit("payment_intent.created", store.payment_intents[inv["_payment_intent"]])


def nothing_to_charge(inv: dict) -> bool:
    """Whether the finalized ``inv`` is paid without a charge: nothing due, or less than the minimum charge."""
    return inv["_payment_intent"] is None


def mark_paid(store: Store, inv: dict) -> None:
    """``inv`` paid: by its PaymentIntent, or without a charge (``nothing_to_charge``: nothing paid)."""
    now = store.now()
    charged = not nothing_to_charge(inv)
    inv.update(status="paid", amount_paid=inv["amount_due"] if charged else 0, amount_remaining=0, attempted=True,
               next_payment_attempt=None)
    inv["attempt_count"] += 1 if charged else 0
    inv["status_transitions"]["paid_at"] = now
    store.emit("invoice.paid", inv)
    store.emit("invoice.payment_succeeded", inv)


def void(store: Store, inv: dict) -> None:
    """Void the open invoice ``inv`` and cancel its PaymentIntent, so that nothing can pay it any more.

    Stripe: "Voiding an invoice ... cancels the invoice's PaymentIntent"
    (https://docs.stripe.com/invoicing/overview#void); a confirm of it is then
    ``payment_intent_unexpected_state``, and ``/pay`` of the invoice ``invoice_unexpected_state``.
    """
    inv.update(status="void", amount_remaining=0, next_payment_attempt=None)
    inv["status_transitions"]["voided_at"] = store.now()
    pi = store.payment_intents.get(inv["_payment_intent"] or "")
    if pi is not None and pi["status"] not in ("succeeded", "canceled"):
        pi.update(status="canceled", canceled_at=store.now(), cancellation_reason="void_invoice", next_action=None)
        store.emit("payment_intent.canceled", pi)
    store.emit("invoice.voided", inv)


def schedule_retry(store: Store, inv: dict) -> None:
    """Set ``next_payment_attempt`` after a failed attempt at ``inv``: the next retry, or ``None``.

    Only renewal invoices are retried: a first invoice waits for the customer to pay it.
    """
    retries_done = inv["attempt_count"] - 1
    if inv["billing_reason"] != "subscription_cycle" or retries_done >= len(RETRY_DELAYS):
        inv["next_payment_attempt"] = None
    else:
        inv["next_payment_attempt"] = store.now() + RETRY_DELAYS[retries_done]


def attempt(store: Store, inv: dict, pm: dict | None, force_fail: bool = False) -> str:
    """Charge ``inv``'s PaymentIntent with ``pm``; returns the PaymentIntent status reached."""
    pi = store.payment_intents[inv["_payment_intent"]]
    outcome = "declined" if force_fail else cards.card_outcome(pm, store.now())
    pi["payment_method"] = pm["id"] if pm else None
    if outcome == "requires_action":
        pi.update(status="requires_action", next_action={
            "type": "use_stripe_sdk",
            "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": ""}})
        store.emit("payment_intent.requires_action", pi)
        return "requires_action"
    inv["attempted"] = True
    if outcome == "declined":
        inv["attempt_count"] += 1
        schedule_retry(store, inv)
        pi.update(status="requires_payment_method", payment_method=None, last_payment_error={
            "type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
            "message": "Your card was declined.",
            "payment_method": public(pm) if pm else None})
        store.emit("payment_intent.payment_failed", pi)
        store.emit("invoice.payment_failed", inv)
        return "requires_payment_method"
    pi.update(status="succeeded", amount_received=pi["amount"], last_payment_error=None,
              next_action=None, latest_charge=new_id("ch_"))
    store.emit("payment_intent.succeeded", pi)
    mark_paid(store, inv)
    return "succeeded"
