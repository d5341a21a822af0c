"""Subscription changes that cost money: prorations, and charging them at once.

Stripe prorates a price or quantity change by the share of the current period left after the
``proration_date`` (https://docs.stripe.com/billing/subscriptions/prorations): a credit for the
unused time on the old price and a charge for the remaining time on the new one. With
``proration_behavior=always_invoice`` those lines are invoiced and charged at once; with
``create_prorations`` they wait for the next renewal invoice; ``none`` bills nothing. With
``payment_behavior=pending_if_incomplete`` a charge that fails leaves the change waiting
(``pending.py``). Money is in minor units. The caller holds the store lock.
"""

from __future__ import annotations

import datetime as dt

from ..billing import cards, invoicing, periods
from ..billing.objects import invoice_line
from ..core.store import Store, StripeError
from ..products.models import subscribable
from . import pending
from .objects import find_item

PRORATION_BEHAVIORS = ("create_prorations", "none", "always_invoice")

PAYMENT_BEHAVIORS = ("allow_incomplete", "default_incomplete", "error_if_incomplete",
                     "pending_if_incomplete")


# What Stripe accepts in an update with payment_behavior=pending_if_incomplete.
PENDING_UPDATE_PARAMS = {"items", "proration_behavior", "proration_date", "payment_behavior",
                         "expand", "billing_cycle_anchor", "trial_end", "trial_from_plan"}


def _day(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%d %b %Y")


def planned_changes(store: Store, sub: dict, entries: list) -> list[tuple[dict, dict, int]]:
    """``(item, new price, new quantity)`` for each ``items[n]`` entry that changes an existing item."""
    planned = []
    for i, entry in enumerate(entries):
        if not entry.get("id") or entry.get("deleted") in (True, "true"):
            continue
        item = find_item(sub, entry["id"], f"items[{i}][id]")
        price = subscribable(store, entry["price"], f"items[{i}][price]", sub["currency"]) if entry.get("price") \
            else item["price"]
        if "quantity" not in item:
            raise StripeError(400, "The emulator changes a metered item by deleting it and adding the new price.",
                              param=f"items[{i}][id]")
        quantity = int(entry["quantity"]) if entry.get("quantity") not in (None, "") else item["quantity"]
        if quantity < 1:
            raise StripeError(400, "Invalid integer: quantity must be at least 1.",
                              param=f"items[{i}][quantity]")
        if price["id"] != item["price"]["id"] or quantity != item["quantity"]:
            planned.append((item, price, quantity))
    return planned


def proration_date(store: Store, sub: dict, value) -> int:
    """The time a change is prorated from: ``value`` (Unix seconds) or now, within the current period."""
    start, end = periods.period_start(sub), periods.period_end(sub)
    when = store.now() if value in (None, "") else int(value)
    if not start <= when <= end:
        raise StripeError(400, "The proration_date must be within the subscription's current "
                          f"period ({start} to {end}).", param="proration_date")
    return when


def _share_left(sub: dict, when: int) -> float:
    """The share of the current period left after ``when`` (0 once it is over)."""
    start, end = periods.period_start(sub), periods.period_end(sub)
    return (end - when) / (end - start) if end > max(start, when) else 0


def _unused_line(sub: dict, item: dict, when: int) -> dict:
    """The credit for the time left after ``when`` on the item's current price and quantity."""
    old = item["price"]
    credit = -round(old["unit_amount"] * item["quantity"] * _share_left(sub, when))
    return invoice_line(
        sub["id"], item["id"], old, item["quantity"], credit, when, periods.period_end(sub),
        f"Unused time on {item['quantity']} × {old['id']} after {_day(when)}", proration=True)


def proration_lines(sub: dict, planned: list, when: int) -> list[dict]:
    """A credit for the unused time of each changed item and a charge for the rest at its new terms."""
    if sub["status"] == "trialing":
        return []  # a trial's period costs nothing, so Stripe has no unused time to credit nor rest to charge
    end, share = periods.period_end(sub), _share_left(sub, when)
    lines = []
    for item, price, quantity in planned:
        lines.append(_unused_line(sub, item, when))
        lines.append(invoice_line(
            sub["id"], item["id"], price, quantity, round(price["unit_amount"] * quantity * share),
            when, end, f"Remaining time on {quantity} × {price['id']} after {_day(when)}", proration=True))
    return lines


def _invoice_and_charge(store: Store, sub: dict, lines: list, start: int, end: int) -> tuple[dict, str]:
    """Invoice ``lines`` (``billing_reason`` ``subscription_update``) and charge it off-session."""
    inv = invoicing.open_invoice(store, sub, "subscription_update", start, end, lines=lines)
    invoicing.finalize(store, inv)
    if inv["amount_due"] == 0:
        invoicing.mark_paid(store, inv)
        return inv, "succeeded"
    return inv, invoicing.attempt(store, inv, cards.paying_method(store, sub))


def charge_now(store: Store, sub: dict, lines: list) -> tuple[dict, str]:
    """Invoice a change's proration ``lines`` for their period and charge it off-session."""
    return _invoice_and_charge(store, sub, lines, lines[0]["period"]["start"], lines[0]["period"]["end"])


def take_prorations(sub: dict) -> list[dict]:
    """The proration lines waiting for the next invoice (``create_prorations``), now taken."""
    return sub.pop("_pending_prorations", None) or []


def change_items(store: Store, sub: dict, params: dict) -> bool:
    """Apply ``items`` price and quantity changes with their prorations; ``False`` if they wait.

    Raises a card error (402, nothing changed) for ``error_if_incomplete`` when the charge fails.
    """
    planned = planned_changes(store, sub, params.get("items") or [])
    behavior = params.get("proration_behavior") or "create_prorations"
    if not planned:
        return True
    when = proration_date(store, sub, params.get("proration_date"))
    lines = proration_lines(sub, planned, when) if behavior != "none" else []
    if behavior == "create_prorations":
        sub["_pending_prorations"] = take_prorations(sub) + lines
    elif behavior == "always_invoice" and lines:
        inv, status = charge_now(store, sub, lines)
        if status != "succeeded":
            payment = params.get("payment_behavior") or "allow_incomplete"
            if payment == "pending_if_incomplete":
                pending.set_pending(store, sub, planned, inv)
                return False
            if payment == "error_if_incomplete":
                raise cards.decline_error(store, store.payment_intents.get(inv["_payment_intent"]), None)
            sub["status"] = "past_due"
    pending.apply_items(sub, planned)
    return True


def check_update(params: dict) -> None:
    """Refuse what Stripe refuses in an update: unknown behaviors, or extra parameters with pending updates."""
    if params.get("proration_behavior") not in (None, *PRORATION_BEHAVIORS):
        raise StripeError(400, f"Invalid proration_behavior: must be one of {', '.join(PRORATION_BEHAVIORS)}",
                          param="proration_behavior")
    if params.get("payment_behavior") not in (None, *PAYMENT_BEHAVIORS):
        raise StripeError(400, f"Invalid payment_behavior: must be one of {', '.join(PAYMENT_BEHAVIORS)}",
                          param="payment_behavior")
    if params.get("payment_behavior") == "pending_if_incomplete":
        _check_pending(params)


def _check_pending(params: dict) -> None:
    """A pending update takes the parameters of ``PENDING_UPDATE_PARAMS``, and of an item its ``price`` and
    ``quantity`` (https://docs.stripe.com/billing/subscriptions/pending-updates-reference): no deletion."""
    extra = sorted(set(params) - PENDING_UPDATE_PARAMS)
    extra += [f"items[{i}][{key}]" for i, entry in enumerate(params.get("items") or [])
              for key in sorted(set(entry) - {"id", "price", "quantity"})]
    if extra:
        raise StripeError(400, "When payment_behavior is pending_if_incomplete, only some parameters "
                          f"are supported; {extra[0]} is not one of them.", param=extra[0])


def cancel_prorations(store: Store, sub: dict, prorate: bool, invoice_now: bool) -> None:
    """``DELETE /v1/subscriptions/{id}``'s ``prorate`` (credit the unused time) and ``invoice_now``
    (invoice what is pending now; a credit larger than the charges goes to the customer's balance)."""
    lines, now = take_prorations(sub), store.now()
    if prorate and sub["status"] != "trialing":  # a trial's unused time cost nothing
        lines += [_unused_line(sub, item, now) for item in sub["items"]["data"] if "quantity" in item]
    if not invoice_now or not lines:
        sub["_pending_prorations"] = lines
        return
    credit = sum(line["amount"] for line in lines)
    cus = store.customers.get(sub["customer"])
    if credit < 0 and cus is not None:
        cus["balance"] += credit
    _invoice_and_charge(store, sub, lines, now, now)
