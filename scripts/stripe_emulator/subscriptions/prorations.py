"""Subscription changes that cost money: prorations, and charging them at once.

Stripe prorates a price or quantity change by the share of the current period left after the
``proration_date`` (https://docs.stripe.com/billing/subscriptions/prorations): a credit for the
unused time (``classic``: at the old price; ``flexible``: from what each debit of the period took,
``flexible.py``) and a charge for the remaining time on the new one. With
``proration_behavior=always_invoice`` those lines are invoiced and charged at once; with
``create_prorations`` they wait for the next renewal invoice; ``none`` bills nothing. With
``payment_behavior=pending_if_incomplete`` a charge that fails leaves the change waiting
(``pending.py``). Money is in minor units. The caller holds the store lock.
"""

from __future__ import annotations

import datetime as dt

from ..billing import cards, discounts, invoicing, periods
from ..billing.objects import invoice_line
from ..core.store import Store, StripeError
from ..products.models import subscribable
from . import flexible, pending, usage
from .objects import find_item

PRORATION_BEHAVIORS = ("create_prorations", "none", "always_invoice")

PAYMENT_BEHAVIORS = ("allow_incomplete", "default_incomplete", "error_if_incomplete",
                     "pending_if_incomplete")



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
        # 0 is a quantity Stripe accepts (``models.item_quantity``); a negative one the validation refused.
        quantity = int(entry["quantity"]) if entry.get("quantity") not in (None, "") else item["quantity"]
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


def _net(store: Store, discount: dict | None, price: dict, quantity: int) -> int:
    """A period of ``quantity`` × ``price`` less ``discount`` (minor units): what the discount in force makes it."""
    full = price["unit_amount"] * quantity
    if discount is None or not discounts.applies(store, discount, price["product"]):
        return full
    return full - discounts.amount(store, discount, full, price["currency"])


def _unused_lines(store: Store, sub: dict, item: dict, when: int, discount: dict | None = None) -> list[dict]:
    """The credit for the time left after ``when``: in ``classic`` mode one, on the item's current price and
    quantity at what the ``discount`` in force until then made it; in ``flexible`` mode one per debit of the
    period, from what it took (``flexible.credit_lines``)."""
    old = item["price"]
    description = f"Unused time on {item['quantity']} × {old['id']} after {_day(when)}"
    if flexible.is_flexible(sub):
        return flexible.credit_lines(store, sub, item, when, description)
    credit = -round(_net(store, discount, old, item["quantity"]) * _share_left(sub, when))
    return [invoice_line(sub["id"], item["id"], old, item["quantity"], credit, when, periods.period_end(sub),
                         description, proration=True)]


def proration_lines(store: Store, sub: dict, planned: list, when: int, before: list | None = None,
                    after: list | None = None) -> list[dict]:
    """A credit for the unused time of each changed item and a charge for the rest at its new terms.

    As Stripe computes them by default (``proration_discounts=included``,
    https://docs.stripe.com/changelog/clover/2025-09-30/itemize-proration-discount-amounts: the discount IDs are
    on the line, "discount amounts are 0"): each line carries the discount in force for its side inside its amount
    (``before``: the discount ids until the change, ``after``: from it; default the subscription's), and is not
    ``discountable``, so no invoice-level discount touches it. An upgrade with a new code credits the old time
    whole and discounts only the new time.
    """
    if sub["status"] == "trialing":
        return []  # a trial's period costs nothing, so Stripe has no unused time to credit nor rest to charge
    end, share = periods.period_end(sub), _share_left(sub, when)
    old_discount = discounts.current(store, sub["discounts"] if before is None else before, when)
    new_discount = discounts.current(store, sub["discounts"] if after is None else after, when)
    lines = []
    for item, price, quantity in planned:
        lines += [_included(line, old_discount) for line in _unused_lines(store, sub, item, when, old_discount)]
        lines.append(_included(invoice_line(
            sub["id"], item["id"], price, quantity, round(_net(store, new_discount, price, quantity) * share),
            when, end, f"Remaining time on {quantity} × {price['id']} after {_day(when)}", proration=True),
            new_discount))
        if new_discount is not None:
            lines[-1]["_discount"] = new_discount["id"]  # a ``once`` discount is used up by the invoice of this line
    return lines


def _included(line: dict, discount: dict | None) -> dict:
    """``line`` naming the ``discount`` inside its amount, as ``proration_discounts=included`` shows it."""
    if discount is not None:
        line.update(discounts=[discount["id"]], discount_amounts=[{"amount": 0, "discount": discount["id"]}])
    return line


def _invoice_and_charge(store: Store, sub: dict, lines: list, start: int, end: int) -> tuple[dict, str]:
    """Invoice ``lines`` (``billing_reason`` ``subscription_update``) and charge it off-session."""
    inv = invoicing.open_invoice(store, sub, "subscription_update", start, end, lines=lines)
    invoicing.finalize(store, inv)
    if invoicing.nothing_to_charge(inv):
        invoicing.mark_paid(store, inv)
        return inv, "succeeded"
    return inv, invoicing.attempt(store, inv, cards.paying_method(store, sub))


def charge_now(store: Store, sub: dict, lines: list) -> tuple[dict, str]:
    """Invoice a change's proration ``lines`` for their period and charge it off-session."""
    return _invoice_and_charge(store, sub, lines, lines[0]["period"]["start"], lines[0]["period"]["end"])


def take_prorations(sub: dict) -> list[dict]:
    """The proration lines waiting for the next invoice (``create_prorations``), now taken."""
    return sub.pop("_pending_prorations", None) or []


def _interval(price: dict) -> tuple[str, int]:
    return price["recurring"]["interval"], price["recurring"]["interval_count"]


def restart_lines(store: Store, sub: dict, planned: list, when: int, behavior: str,
                  before: list | None = None) -> list[dict] | None:
    """The invoice of a change of billing interval (monthly -> yearly), or ``None`` when no item changes it.

    Stripe starts a new period at the change and invoices it at once (https://docs.stripe.com/billing/subscriptions/
    billing-cycle#changing; "Updating a subscription generates a new invoice when ... The billing period changes",
    https://docs.stripe.com/billing/subscriptions/pending-updates): the unused time of the old terms
    credited (unless ``proration_behavior=none``), then a whole period of every item at the new terms, which
    the invoice's discount applies to as to any period.
    """
    if sub["status"] == "trialing" or all(_interval(price) == _interval(item["price"]) for item, price, _ in planned):
        return None
    old_discount = discounts.current(store, sub["discounts"] if before is None else before, when)
    credits = [] if behavior == "none" else [line for item, _, _ in planned
                                              for line in _unused_lines(store, sub, item, when, old_discount)]
    changed = {item["id"]: (price, quantity) for item, price, quantity in planned}
    terms = [(item, *changed.get(item["id"], (item["price"], item["quantity"]))) for item in sub["items"]["data"]
             if "quantity" in item]  # a metered item is billed in arrears, not for a period ahead
    end = min(periods.add_interval(when, *_interval(price)) for _, price, _ in terms)
    return credits + [invoice_line(sub["id"], item["id"], price, quantity, price["unit_amount"] * quantity, when, end)
                      for item, price, quantity in terms]


def _charged(store: Store, sub: dict, params: dict, planned: list, lines: list) -> bool:
    """Charge ``lines`` now; ``False`` when the change waits (``pending_if_incomplete``). Raises a card error for
    ``error_if_incomplete``; ``allow_incomplete`` leaves the subscription ``past_due``."""
    inv, status = charge_now(store, sub, lines)
    if status == "succeeded":
        return True
    payment = params.get("payment_behavior") or "allow_incomplete"
    if payment == "pending_if_incomplete":
        pending.set_pending(store, sub, planned, inv)
        return False
    if payment == "error_if_incomplete":
        raise cards.decline_error(store, store.payment_intents.get(inv["_payment_intent"]), None)
    sub["status"] = "past_due"
    return True


def change_items(store: Store, sub: dict, params: dict, before: list | None = None) -> bool:
    """Apply ``items`` price and quantity changes with their prorations; ``False`` if they wait.

    ``before``: the discount ids in force until the change, when the update replaced them (``proration_lines``).
    A change of billing interval starts a new period, invoiced at once (``restart_lines``).
    Raises a card error (402, nothing changed) for ``error_if_incomplete`` when the charge fails.
    """
    planned = planned_changes(store, sub, params.get("items") or [])
    behavior = params.get("proration_behavior") or "create_prorations"
    if not planned:
        return True
    when = proration_date(store, sub, params.get("proration_date"))
    restart = restart_lines(store, sub, planned, when, behavior, before)
    lines = restart or (proration_lines(store, sub, planned, when, before) if behavior != "none" else [])
    if restart is None and behavior == "create_prorations":
        sub["_pending_prorations"] = take_prorations(sub) + lines
    elif (restart is not None or behavior == "always_invoice") and lines and \
            not _charged(store, sub, params, planned, lines):
        return False
    pending.apply_items(sub, planned)
    if restart is not None:
        for item in sub["items"]["data"]:
            item["current_period_start"], item["current_period_end"] = when, restart[-1]["period"]["end"]
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
        pending.check_params(params)


def cancel_prorations(store: Store, sub: dict, prorate: bool, invoice_now: bool) -> None:
    """``DELETE /v1/subscriptions/{id}``'s ``prorate`` (credit the unused time) and ``invoice_now``
    (invoice what is pending now; a credit larger than the charges goes to the customer's balance).

    ``invoice_now`` "will generate a final invoice that invoices for any un-invoiced metered usage and
    new/pending proration invoice items" (https://docs.stripe.com/api/subscriptions/cancel): the
    period's usage so far is billed on it; without it that usage is never billed. Usage has no
    proration ("We don't support proration with usage-based billing",
    https://docs.stripe.com/billing/subscriptions/usage-based/manage-billing-setup).
    """
    lines, now = take_prorations(sub), store.now()
    if prorate and sub["status"] != "trialing":  # a trial's unused time cost nothing
        discount = discounts.current(store, sub["discounts"], now)
        lines += [line for item in sub["items"]["data"] if "quantity" in item
                  for line in _unused_lines(store, sub, item, now, discount)]
    if invoice_now:  # events of the cancellation's own second are before it (timestamps are whole seconds)
        lines += usage.usage_lines(store, sub, periods.period_start(sub), now + 1)
    if not invoice_now or not lines:
        sub["_pending_prorations"] = lines
        return
    _invoice_and_charge(store, sub, lines, now, now)  # a net credit goes to the customer's balance
