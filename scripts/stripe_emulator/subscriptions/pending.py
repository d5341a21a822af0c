"""Pending updates and the subscription side of a paid invoice.

With ``payment_behavior=pending_if_incomplete`` a change whose charge fails keeps the subscription
as it was, with the change in ``pending_update`` until its invoice is paid
(``pending_update_applied``) or it expires (``pending_update_expired``): after 23 hours, or at the end of
the current period or of the trial when that comes first ("the earlier of the end of the trial, the end of
the current billing period, or 23 hours", https://docs.stripe.com/billing/subscriptions/pending-updates-reference).
The caller holds the store lock.
"""

from __future__ import annotations

from ..billing import invoicing, periods
from ..core.store import Store, StripeError, public
from ..products.models import legacy_plan
from .objects import find_item

PENDING_UPDATE_SECONDS = 23 * 3600

# What Stripe accepts in an update with payment_behavior=pending_if_incomplete.
PENDING_UPDATE_PARAMS = {"items", "proration_behavior", "proration_date", "payment_behavior",
                         "expand", "billing_cycle_anchor", "trial_end", "trial_from_plan"}


def check_params(params: dict) -> None:
    """A pending update takes the parameters of ``PENDING_UPDATE_PARAMS``, and of an item its ``price`` and
    ``quantity`` (https://docs.stripe.com/billing/subscriptions/pending-updates-reference): no deletion.

    An entry without ``id`` (a new item) is refused as not modelled: Stripe's page changes an existing
    item's price in its example, and ``pending_update.subscription_items`` here holds changed items only.
    """
    extra = sorted(set(params) - PENDING_UPDATE_PARAMS)
    extra += [f"items[{i}][{key}]" for i, entry in enumerate(params.get("items") or [])
              for key in sorted(set(entry) - {"id", "price", "quantity"})]
    if extra:
        raise StripeError(400, "When payment_behavior is pending_if_incomplete, only some parameters "
                          f"are supported; {extra[0]} is not one of them.", param=extra[0])
    added = [f"items[{i}][price]" for i, entry in enumerate(params.get("items") or []) if not entry.get("id")]
    if added:
        raise StripeError(400, f"The emulator does not model adding an item in a pending update ({added[0]}): "
                          "change an existing item's price or quantity, or use another payment_behavior.",
                          code="parameter_unsupported", param=added[0])


def apply_items(sub: dict, planned: list) -> None:
    for item, price, quantity in planned:
        if price["id"] != item["price"]["id"]:
            item["price"], item["plan"] = public(price), legacy_plan(price)
        item["quantity"] = quantity


def _expiry(store: Store, sub: dict) -> int:
    """When a pending update made now expires (see above): a trial's end counts while it is trialing (Stripe
    keeps ``trial_end`` once the trial is over)."""
    ends = [store.now() + PENDING_UPDATE_SECONDS, periods.period_end(sub)]
    if sub["status"] == "trialing" and sub.get("trial_end"):
        ends.append(sub["trial_end"])
    return min(ends)


def set_pending(store: Store, sub: dict, planned: list, inv: dict) -> None:
    """Keep the change in ``pending_update`` until ``inv`` is paid or the update expires."""
    items = []
    for item, price, quantity in planned:
        pending = public(item)
        pending.update(price=public(price), plan=legacy_plan(price), quantity=quantity)
        items.append(pending)
    sub["pending_update"] = {"billing_cycle_anchor": None,
                             "expires_at": _expiry(store, sub),
                             "subscription_items": items, "trial_end": None, "trial_from_plan": None}
    sub["_pending_invoice"] = inv["id"]


def after_invoice_paid(store: Store, inv: dict) -> bool:
    """Apply the pending update ``inv`` pays for; ``False`` when it pays for none."""
    sub = store.subscriptions.get(inv["parent"]["subscription_details"]["subscription"] or "")
    if sub is None or not sub.get("pending_update") or sub.get("_pending_invoice") != inv["id"]:
        return False
    before = public(sub)
    planned = [(find_item(sub, pending["id"], "items"), pending["price"], pending["quantity"])
               for pending in sub["pending_update"]["subscription_items"]]
    apply_items(sub, planned)
    sub["pending_update"], sub["_pending_invoice"] = None, None
    # save_default_payment_method=on_subscription: every successful payment of the subscription saves
    # its method, this one too (Stripe's subscription object, payment_settings.save_default_payment_method).
    paid_with = store.payment_intents.get(inv.get("_payment_intent") or "", {}).get("payment_method")
    if paid_with and sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = paid_with
    store.emit("customer.subscription.updated", sub, before)
    store.emit("customer.subscription.pending_update_applied", sub)
    return True


def expire_pending(store: Store, sub: dict) -> None:
    """The pending update expired (see above): drop it and void its unpaid invoice."""
    before = public(sub)
    inv = store.invoices.get(sub.pop("_pending_invoice", None) or "")
    sub["pending_update"] = None
    if inv is not None and inv["status"] == "open":
        invoicing.void(store, inv)
    store.emit("customer.subscription.updated", sub, before)
    store.emit("customer.subscription.pending_update_expired", sub)


def cancel_on_void(store: Store, inv: dict) -> None:
    """``inv`` was voided by a request: if it carries a pending update, that update is cancelled.

    "To cancel a pending update, you need to void the invoice the update created"
    (https://docs.stripe.com/billing/subscriptions/pending-updates#canceling-changing), and then "the
    ``pending_update`` hash is cleared and the associated changes are discarded" (the reference page's
    lifecycle): the subscription keeps its items, announced by ``customer.subscription.updated``. The docs name
    ``pending_update_expired`` only for an update that expires or that Stripe voids itself, not for this one.
    """
    sub = store.subscriptions.get(((inv.get("parent") or {}).get("subscription_details") or {}).get("subscription")
                                  or "")
    if sub is None or not sub.get("pending_update") or sub.get("_pending_invoice") != inv["id"]:
        return
    before = public(sub)
    sub["pending_update"], sub["_pending_invoice"] = None, None
    store.emit("customer.subscription.updated", sub, before)


def due(sub: dict) -> list[tuple[int, object]]:
    """The ``(time, action)`` of a pending update's expiry, if ``sub`` has one."""
    pending = sub.get("pending_update")
    return [(pending["expires_at"], expire_pending)] if pending else []


def after_first_payment(store: Store, sub: dict, pm: dict) -> None:
    """Subscription side of a successful invoice payment confirmed by the customer."""
    before = public(sub)
    if sub["status"] in ("incomplete", "past_due", "unpaid"):
        sub["status"] = "active"
    if sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = pm["id"]
    store.emit("customer.subscription.updated", sub, before)


def after_payment(store: Store, inv: dict, pm: dict) -> None:
    """The subscription side of ``inv`` paid with ``pm``: its pending update applies, else it is active."""
    if not after_invoice_paid(store, inv):
        sub = store.subscriptions.get(inv["parent"]["subscription_details"]["subscription"])
        if sub is not None:
            after_first_payment(store, sub, pm)
