"""Invoices: paying an open one now, and previewing the one a change or renewal makes."""

from __future__ import annotations

from ..billing import cards, invoicing, periods
from ..billing.objects import invoice, invoice_line
from ..core.store import Store, StripeError, new_id, public
from ..customers import payment_methods
from ..discounts import models as discount_models
from ..products.models import subscribable
from ..subscriptions import pending, prorations, usage
from ..subscriptions import rules as subscription_rules


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
        pm = store.payment_methods[payment_methods.customer_pm(store, inv["customer"], pm_id, "payment_method")]
    else:
        pm = cards.paying_method(store, sub) if sub is not None else None
    if pm is None:
        raise StripeError(400, "This customer has no attached payment source or default payment method.",
                          code="resource_missing")
    if invoicing.nothing_to_charge(inv):
        invoicing.mark_paid(store, inv)
        status = "succeeded"
    else:
        status = invoicing.attempt(store, inv, pm, force_fail=cards.card_outcome(pm) == "requires_action")
    if status != "succeeded":
        raise cards.decline_error(store, store.payment_intents.get(inv["_payment_intent"] or ""), pm)
    pending.after_payment(store, inv, pm)
    return inv


def preview(store: Store, params: dict) -> dict:
    """``POST /v1/invoices/create_preview`` for a subscription: the invoice its change (or renewal) makes.

    Nothing is stored. With ``subscription_details[items]`` and ``always_invoice`` it is the invoice
    charged at once (the prorations); otherwise the next renewal: waiting prorations, then the
    next period at the (new) prices. A subscription that will not renew has no upcoming invoice.
    """
    sub = _previewed(store, params)
    if params.get("customer") and params["customer"] != sub["customer"]:
        raise StripeError(400, "The subscription does not belong to this customer.", param="subscription")
    details = params.get("subscription_details") or {}
    prorations.check_update({k: v for k, v in details.items() if k in ("proration_behavior",)})
    # Refused as the update would refuse them: an added item's price, the items' count, prices twice, intervals.
    entries = details.get("items") or []
    for i, entry in enumerate(entries):
        if not entry.get("id"):
            subscribable(store, entry.get("price"), f"subscription_details[items][{i}][price]", sub["currency"])
    subscription_rules.check_update(store, sub, {"items": entries})
    planned = prorations.planned_changes(store, sub, entries)
    behavior = details.get("proration_behavior") or "create_prorations"
    when = prorations.proration_date(store, sub, details.get("proration_date")) if planned else store.now()
    planned_discounts = discount_models.planned_discounts(store, sub, params.get("discounts"))
    restart = prorations.restart_lines(store, sub, planned, when, behavior) if planned else None
    lines = restart or (prorations.proration_lines(store, sub, planned, when, after=planned_discounts)
                        if planned and behavior != "none" else [])
    if restart is None and not (planned and behavior == "always_invoice"):
        if sub["status"] in ("canceled", "incomplete_expired") or sub["cancel_at"]:
            raise StripeError(404, "No upcoming invoices for customer: " + sub["customer"],
                              code="invoice_upcoming_none")
        # The renewal bills the usage so far in arrears with the next period in advance.
        lines = (list(sub.get("_pending_prorations") or []) + lines + _next_period_lines(sub, planned)
                 + usage.usage_lines(store, sub, periods.period_start(sub), periods.period_end(sub)))
    start = lines[0]["period"]["start"] if lines else when
    inv = invoice(store, sub, "upcoming" if not planned else "subscription_update", start,
                          periods.period_end(sub), lines=[dict(line) for line in lines],
                          discount_ids=planned_discounts,
                          automatic_tax=(params.get("automatic_tax") or {}).get("enabled"))
    inv.update(id=f"upcoming_{new_id('in_')}", status="draft", created=store.now(),
               period_start=periods.period_start(sub), period_end=periods.period_end(sub))
    return public(inv)


def _previewed(store: Store, params: dict) -> dict:
    """The subscription a preview is for: ``subscription``, else the ``customer``'s newest live one."""
    if params.get("subscription") or not params.get("customer"):
        return store.get("subscriptions", params.get("subscription"), "subscription")
    live = [sub for sub in store.subscriptions.values()
            if sub["customer"] == params["customer"] and sub["status"] not in ("canceled", "incomplete_expired")]
    if not live:
        raise StripeError(404, "No upcoming invoices for customer: " + params["customer"],
                          code="invoice_upcoming_none")
    return max(live, key=lambda sub: sub["created"])


def _next_period_lines(sub: dict, planned: list) -> list[dict]:
    start = periods.period_end(sub)
    rec = sub["items"]["data"][0]["price"]["recurring"]
    end = periods.add_interval(start, rec["interval"], rec["interval_count"])
    changed = {item["id"]: (price, quantity) for item, price, quantity in planned}
    lines = []
    for item in sub["items"]["data"]:
        if "quantity" not in item:
            continue  # metered: billed in arrears at the renewal, for what its meter counted
        price, quantity = changed.get(item["id"], (item["price"], item["quantity"]))
        lines.append(invoice_line(sub["id"], item["id"], price, quantity,
                                          price["unit_amount"] * quantity, start, end))
    return lines
