"""Subscriptions: create, update, schedule or run a cancellation (https://docs.stripe.com/api/subscriptions).

Each function mutates the store (the caller holds the lock) and emits the events Stripe would emit;
updated events get their ``previous_attributes`` from a snapshot taken before the change.
"""

from __future__ import annotations

from ..billing import cards, invoicing, periods
from ..core.store import Store, StripeError, merge_metadata, public
from ..customers import payment_methods
from ..customers.models import live_customer
from ..discounts import models as discount_models
from ..products.models import metered, subscribable
from ..schedules import models as schedule_models
from . import objects, prorations, rules, trials


def _item_prices(store: Store, entries: list) -> list[tuple[dict, int]]:
    if not entries:
        raise StripeError(400, "Missing required param: items.", code="parameter_missing",
                          param="items")
    prices = []
    for i, entry in enumerate(entries):
        currency = prices[0][0]["currency"] if prices else None
        p = subscribable(store, entry.get("price"), f"items[{i}][price]", currency)
        prices.append((p, item_quantity(p, entry, i)))
    return prices


def item_quantity(p: dict, entry: dict, i: int) -> int | None:
    """An item's quantity: 1 by default, 0 kept (Stripe bills such an item nothing, "the subscription will act
    like a free plan", https://github.com/stripe/stripe-go/issues/36 quoting Stripe's docs; a negative one the
    validation refused); none for a metered price, which refuses one as Stripe does (its usage is what the meter
    reports, https://docs.stripe.com/billing/subscriptions/usage-based)."""
    if not metered(p):
        return 1 if entry.get("quantity") in (None, "") else int(entry["quantity"])
    if entry.get("quantity") not in (None, ""):
        raise StripeError(400, f"Quantity should not be specified where usage_type is `metered`. Remove quantity "
                          f"from `items[{i}]`.", param=f"items[{i}][quantity]")
    return None


def _trial_seconds(store: Store, params: dict) -> int:
    """How long the trial lasts: to ``trial_end`` (``now``: none), else ``trial_period_days`` days."""
    trial_end = params.get("trial_end")
    if trial_end == "now":
        return 0
    if isinstance(trial_end, int):
        return trial_end - store.now()
    return int(params.get("trial_period_days") or 0) * 86400


def create_subscription(store: Store, params: dict) -> dict:
    cus = live_customer(store, params.get("customer"), "customer")
    rules.check_create(store, params)
    prices = _item_prices(store, params.get("items") or [])
    behavior = params.get("payment_behavior") or "allow_incomplete"
    trial_seconds = _trial_seconds(store, params)
    pm_id = params.get("default_payment_method")
    pm_id = payment_methods.customer_pm(store, cus["id"], pm_id, "default_payment_method") if pm_id else None
    charge_pm_id = pm_id or cus["invoice_settings"]["default_payment_method"]
    charge_pm = store.payment_methods.get(charge_pm_id or "")
    amount = sum(p["unit_amount"] * q for p, q in prices if q is not None)
    needs_payment = amount > 0 and not trial_seconds and behavior != "default_incomplete"
    if needs_payment and charge_pm is None:
        raise StripeError(400, "This customer has no attached payment source or default "
                          "payment method. Please consider adding a default payment method.",
                          code="resource_missing")
    outcome = cards.card_outcome(charge_pm) if needs_payment else None
    if behavior == "error_if_incomplete" and outcome not in (None, "succeeded"):
        raise cards.decline_error(store, None, charge_pm)

    sub = _build_subscription(store, cus, params, prices, trial_seconds)
    sub["default_payment_method"] = pm_id
    if not trial_seconds and (outcome == "succeeded" or amount == 0):
        sub["status"] = "active"
    if outcome == "succeeded" and \
            sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = charge_pm["id"]
    if params.get("discounts"):  # before it is stored: a code refused leaves nothing behind
        discount_models.apply_discounts(store, sub, params["discounts"])
    store.subscriptions[sub["id"]] = sub
    if trial_seconds:
        trials.start_trial(store, sub, params, behavior)
    inv = invoicing.open_invoice(store, sub, "subscription_create", sub["start_date"],
                       periods.period_end(sub))
    if sub["status"] == "incomplete" and (inv["amount_due"] == 0 or invoicing.below_minimum(inv)):
        # Nothing to charge (a 100%-off code, an amount below the minimum charge): the first invoice is paid as it
        # is finalized, so nothing waits for a payment ("incomplete" is "if the initial payment attempt fails",
        # https://docs.stripe.com/api/subscriptions/object#subscription_object-status).
        sub["status"] = "active"
    store.emit("customer.subscription.created", sub)
    invoicing.finalize(store, inv)
    if invoicing.nothing_to_charge(inv):
        invoicing.mark_paid(store, inv)
    elif needs_payment:
        invoicing.attempt(store, inv, charge_pm)
    return sub


def _build_subscription(store: Store, cus: dict, params: dict, prices: list,
                        trial_seconds: int) -> dict:
    now = store.now()
    sub = objects.subscription(store, cus["id"], params, now)
    sub["currency"] = prices[0][0]["currency"]
    rec = prices[0][0]["recurring"]
    end = now + trial_seconds if trial_seconds else \
        periods.add_interval(now, rec["interval"], rec["interval_count"])
    for p, q in prices:
        sub["items"]["data"].append(objects.subscription_item(store, sub["id"], p, q, now, end))
    if trial_seconds:
        sub.update(status="trialing", trial_start=now, trial_end=end)
    return sub


def schedule_cancel(store: Store, sub: dict, at_period_end: bool) -> None:
    if at_period_end:
        sub.update(cancel_at_period_end=True, cancel_at=periods.period_end(sub),
                   canceled_at=store.now())
        sub["cancellation_details"]["reason"] = "cancellation_requested"
    else:
        sub.update(cancel_at_period_end=False, cancel_at=None, canceled_at=None)
        sub["cancellation_details"]["reason"] = None


def cancel_now(store: Store, sub: dict, ended_at: int | None = None) -> None:
    now = store.now()
    sub.update(status="canceled", ended_at=ended_at or now, canceled_at=sub["canceled_at"] or now)
    if sub["cancellation_details"]["reason"] is None:
        sub["cancellation_details"]["reason"] = "cancellation_requested"
    store.emit("customer.subscription.deleted", sub)
    schedule_models.subscription_ended(store, sub)


def ensure_mutable(sub: dict, params: dict) -> None:
    """What an update may change in ``sub``'s status: an ended subscription only its ``cancellation_details``
    and ``metadata``; an ``incomplete`` one "can only have metadata and default_source updated" (the SDK's
    ``Subscription.status``, from https://docs.stripe.com/api/subscriptions/object#subscription_object-status)."""
    if sub["status"] in ("canceled", "incomplete_expired") and \
            set(params) - {"metadata", "cancellation_details", "expand"}:
        raise StripeError(400, "A canceled subscription can only update its "
                          "cancellation_details and metadata.")
    changed = sorted(set(params) - {"metadata", "default_source", "expand"})
    if sub["status"] == "incomplete" and changed:
        raise StripeError(400, "A subscription that is currently in an incomplete state can only have metadata and "
                          f"default_source updated; {changed[0]} is not one of them.", param=changed[0])


def update_subscription(store: Store, sub: dict, params: dict) -> dict:
    ensure_mutable(sub, params)
    schedule_models.check_subscription_update(sub, params)
    rules.check_update(store, sub, params)
    prorations.check_update(params)
    before = public(sub)
    _apply_cancellation(store, sub, params)
    if not _change_items_with_discounts(store, sub, params):
        # The charge failed or needs authentication: the change waits in pending_update.
        store.emit("customer.subscription.updated", sub, before)
        return sub
    for i, entry in enumerate(params.get("items") or []):
        _add_or_remove_item(store, sub, entry, i)
    if "default_payment_method" in params:
        pm_id = params["default_payment_method"]
        sub["default_payment_method"] = payment_methods.customer_pm(
            store, sub["customer"], pm_id, "default_payment_method") if pm_id else None
    if "metadata" in params:
        merge_metadata(sub, params["metadata"])
    _apply_details(sub, params)
    store.emit("customer.subscription.updated", sub, before)
    return sub


def _change_items_with_discounts(store: Store, sub: dict, params: dict) -> bool:
    """``prorations.change_items`` with ``discounts`` applied first, so the change's invoice carries
    them; a change refused (a declined ``error_if_incomplete`` charge) leaves the discounts as they were."""
    if "discounts" not in params:
        return prorations.change_items(store, sub, params)
    kept = sub["discounts"]
    planned = prorations.planned_changes(store, sub, params.get("items") or [])
    discount_models.apply_discounts(store, sub, params["discounts"] or [],
                                    order=discount_models.order_of(sub, planned))
    try:
        return prorations.change_items(store, sub, params, before=kept)
    except StripeError:
        sub["discounts"] = kept
        raise


def _apply_cancellation(store: Store, sub: dict, params: dict) -> None:
    if "cancel_at_period_end" in params:
        schedule_cancel(store, sub, params["cancel_at_period_end"])
    if "cancel_at" in params:
        if params["cancel_at"] in (None, ""):
            schedule_cancel(store, sub, False)
        else:
            # ``min_period_end`` / ``max_period_end`` / ``max_billed_until``: the items share one period here.
            when = params["cancel_at"] if isinstance(params["cancel_at"], int) else periods.period_end(sub)
            sub.update(cancel_at=when, cancel_at_period_end=False,
                       canceled_at=store.now())
            sub["cancellation_details"]["reason"] = "cancellation_requested"


def _apply_details(sub: dict, params: dict) -> None:
    if "description" in params:
        sub["description"] = params["description"] or None
    if "cancellation_details" in params:
        for key in ("comment", "feedback"):
            if key in (params["cancellation_details"] or {}):
                sub["cancellation_details"][key] = params["cancellation_details"][key] or None
    save = (params.get("payment_settings") or {}).get("save_default_payment_method")
    if save:
        sub["payment_settings"]["save_default_payment_method"] = save
    end = ((params.get("trial_settings") or {}).get("end_behavior") or {}).get("missing_payment_method")
    if end:
        sub["trial_settings"]["end_behavior"]["missing_payment_method"] = end


def _add_or_remove_item(store: Store, sub: dict, entry: dict, i: int) -> None:
    # Price and quantity changes of existing items were applied by ``prorations.change_items``.
    if entry.get("id"):
        item = objects.find_item(sub, entry["id"], f"items[{i}][id]")
        if entry.get("deleted") in (True, "true"):
            sub["items"]["data"].remove(item)
        return
    p = subscribable(store, entry.get("price"), f"items[{i}][price]", sub["currency"])
    sub["items"]["data"].append(objects.subscription_item(
        store, sub["id"], p, item_quantity(p, entry, i),
        periods.period_start(sub), periods.period_end(sub)))


def require_subscription(store: Store, sub_id: str, param: str = "subscription") -> dict:
    sub = store.get("subscriptions", sub_id, param)
    if sub["status"] in ("canceled", "incomplete_expired"):
        raise StripeError(400, f"Subscription {sub_id} is {sub['status']}.", param=param)
    return sub
