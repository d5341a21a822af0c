"""Billing behaviour shared by the API, the billing portal and the clock.

Each function mutates the store (the caller holds the lock) and emits the events Stripe
would emit for the same change, in the order Stripe announces them. Updated events get
their ``previous_attributes`` by diffing a snapshot taken before the change, so they name
exactly the keys that changed.
"""

from __future__ import annotations

import datetime as dt

from . import objects
from .state import Store, StripeError, new_id, public

ACTIVE_LIKE = ("active", "past_due", "trialing", "incomplete", "unpaid")

# Retries of a failed renewal, each after the previous attempt (``dunning.py`` runs them).
RETRY_DELAYS = (3 * 86400, 5 * 86400, 7 * 86400)


def period_end(sub: dict) -> int:
    return min(item["current_period_end"] for item in sub["items"]["data"])


def period_start(sub: dict) -> int:
    return min(item["current_period_start"] for item in sub["items"]["data"])


# -- payment methods ---------------------------------------------------------

def resolve_pm(store: Store, pm_id: str, param: str = "payment_method") -> dict:
    """The PaymentMethod for ``pm_id``; a Stripe test id creates a fresh one each time."""
    if pm_id in objects.TEST_CARDS:
        pm = objects.payment_method(store, pm_id)
        store.payment_methods[pm["id"]] = pm
        return pm
    return store.get("payment_methods", pm_id, param)


def attach_pm(store: Store, pm: dict, customer_id: str) -> dict:
    if pm["customer"] == customer_id:
        return pm
    if pm["customer"] is not None:
        raise StripeError(400, "The payment method you provided has already been attached to "
                          "a customer.", code="payment_method_already_attached")
    pm["customer"] = customer_id
    store.emit("payment_method.attached", pm)
    return pm


def detach_pm(store: Store, pm: dict) -> dict:
    if pm["customer"] is None:
        raise StripeError(400, "The payment method you provided is not attached to a "
                          "customer so detachment is impossible.",
                          code="payment_method_unexpected_state")
    cus = store.customers.get(pm["customer"])
    pm["customer"] = None
    store.emit("payment_method.detached", pm)
    if cus and cus["invoice_settings"]["default_payment_method"] == pm["id"]:
        before = public(cus)
        cus["invoice_settings"]["default_payment_method"] = None
        store.emit("customer.updated", cus, before)
    return pm


def customer_pm(store: Store, customer_id: str, pm_id: str, param: str) -> str:
    """Validate a payment method given as a customer's or subscription's default.

    Test ids are attached on the fly for convenience; real ids must already belong to the
    customer, as Stripe requires.
    """
    if pm_id in objects.TEST_CARDS:
        return attach_pm(store, resolve_pm(store, pm_id, param), customer_id)["id"]
    pm = store.get("payment_methods", pm_id, param)
    if pm["customer"] != customer_id:
        raise StripeError(400, f"The customer does not have a payment method with the ID "
                          f"{pm_id}. The payment method must be attached to the customer.",
                          code="resource_missing", param=param)
    return pm_id


def card_outcome(pm: dict | None, now: int | None = None) -> str:
    """How a charge of ``pm`` ends: ``succeeded``, ``declined`` or ``requires_action``.

    With ``now`` (a charge at that emulator time), a card past its expiry month is declined.
    """
    card = objects.TEST_CARDS.get((pm or {}).get("_test_id"), {})
    if pm is None or "decline" in card or (now is not None and expired(pm, now)):
        return "declined"
    return "requires_action" if card.get("requires_action") else "succeeded"


def expired(pm: dict, now: int) -> bool:
    """Whether the card ``pm`` is past its expiry month at ``now`` (Unix seconds, UTC)."""
    card = pm.get("card") or {}
    year, month = divmod(card.get("exp_year", 9999) * 12 + card.get("exp_month", 12), 12)
    return now >= int(dt.datetime(year, month + 1, 1, tzinfo=dt.UTC).timestamp())


def decline_error(store: Store, pi: dict | None, pm: dict | None, message: str | None = None,
                  decline_code: str = "generic_decline") -> StripeError:
    extra = {"decline_code": decline_code, "charge": new_id("ch_")}
    if pi is not None:
        extra["payment_intent"] = public(pi)
    if pm is not None:
        extra["payment_method"] = public(pm)
    return StripeError(402, message or "Your card was declined.", type="card_error",
                       code="card_declined", param="", **extra)


# -- invoices and payments ---------------------------------------------------

def open_invoice(store: Store, sub: dict, reason: str, start: int, end: int,
                 lines: list[dict] | None = None) -> dict:
    """Create a draft subscription invoice (``finalize`` opens it): ``lines``, else the period's charge."""
    inv = objects.invoice(store, sub, reason, start, end, lines=lines)
    store.invoices[inv["id"]] = inv
    sub["latest_invoice"] = inv["id"]
    return inv


def finalize(store: Store, inv: dict) -> None:
    store.emit("invoice.created", inv)
    cus = store.customers.get(inv["customer"]) or {}
    seq = cus.get("next_invoice_sequence", 1)
    if cus:
        cus["next_invoice_sequence"] = seq + 1
    inv["number"] = f"{cus.get('invoice_prefix', 'EMUL')}-{seq:04d}"
    inv["status"] = "open"
    inv["hosted_invoice_url"] = f"{store.base_url}/invoice/{inv['id']}"
    inv["invoice_pdf"] = f"{store.base_url}/invoice/{inv['id']}/pdf"
    inv["status_transitions"]["finalized_at"] = store.now()
    inv["effective_at"] = store.now()
    if inv["amount_due"] > 0:
        pi = objects.payment_intent(store, inv)
        store.payment_intents[pi["id"]] = pi
        inv["_payment_intent"] = pi["id"]
    store.emit("invoice.finalized", inv)
    if inv["_payment_intent"]:
        store.emit("payment_intent.created", store.payment_intents[inv["_payment_intent"]])


def mark_paid(store: Store, inv: dict) -> None:
    now = store.now()
    inv.update(status="paid", amount_paid=inv["amount_due"], amount_remaining=0, attempted=True,
               next_payment_attempt=None)
    inv["attempt_count"] += 1 if inv["amount_due"] else 0
    inv["status_transitions"]["paid_at"] = now
    store.emit("invoice.paid", inv)
    store.emit("invoice.payment_succeeded", inv)


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
    outcome = "declined" if force_fail else card_outcome(pm, store.now())
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


def after_first_payment(store: Store, sub: dict, pm: dict) -> None:
    """Subscription side of a successful invoice payment confirmed by the customer."""
    before = public(sub)
    if sub["status"] in ("incomplete", "past_due", "unpaid"):
        sub["status"] = "active"
    if sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = pm["id"]
    store.emit("customer.subscription.updated", sub, before)


def confirm_payment_intent(store: Store, pi: dict, pm_id: str | None) -> dict:
    if pi["status"] in ("succeeded", "canceled"):
        raise StripeError(400, f"You cannot confirm this PaymentIntent because it has a "
                          f"status of {pi['status']}.", code="payment_intent_unexpected_state")
    pm_id = pm_id or pi["payment_method"]
    if not pm_id:
        raise StripeError(400, "You cannot confirm this PaymentIntent because it's missing a "
                          "payment method.", code="payment_intent_unexpected_state")
    pm = resolve_pm(store, pm_id)
    if pm["customer"] not in (None, pi["customer"]):
        raise StripeError(400, f"The provided PaymentMethod {pm['id']} belongs to another "
                          "customer.", param="payment_method")
    inv = store.invoices[pi["_invoice"]]
    if card_outcome(pm) == "succeeded":
        attach_pm(store, pm, pi["customer"])
    status = attempt(store, inv, pm)
    if status == "requires_payment_method":
        raise decline_error(store, pi, pm)
    if status == "succeeded":
        after_payment(store, inv, pm)
    return pi


def after_payment(store: Store, inv: dict, pm: dict) -> None:
    """The subscription side of ``inv`` paid with ``pm``: its pending update applies, else it is active."""
    # Imported here: ``changes`` builds on this module.
    from .changes import after_invoice_paid

    if not after_invoice_paid(store, inv):
        sub = store.subscriptions.get(inv["parent"]["subscription_details"]["subscription"])
        if sub is not None:
            after_first_payment(store, sub, pm)


# -- subscriptions -----------------------------------------------------------

def _live_customer(store: Store, cus_id) -> dict:
    cus = store.get("customers", cus_id, "customer")
    if cus.get("_deleted"):
        raise StripeError(404, f"No such customer: '{cus['id']}'", code="resource_missing",
                          param="customer")
    return cus


def _item_prices(store: Store, entries: list) -> list[tuple[dict, int]]:
    if not entries:
        raise StripeError(400, "Missing required param: items.", code="parameter_missing",
                          param="items")
    prices = []
    for i, entry in enumerate(entries):
        p = store.get("prices", entry.get("price"), f"items[{i}][price]")
        if not p["recurring"]:
            raise StripeError(400, "The price specified is set to `type=one_time` but this "
                              "field only accepts prices with `type=recurring`.",
                              param=f"items[{i}][price]")
        prices.append((p, int(entry.get("quantity") or 1)))
    return prices


def create_subscription(store: Store, params: dict) -> dict:
    cus = _live_customer(store, params.get("customer"))
    prices = _item_prices(store, params.get("items") or [])
    behavior = params.get("payment_behavior") or "allow_incomplete"
    trial_days = int(params.get("trial_period_days") or 0)
    pm_id = params.get("default_payment_method")
    pm_id = customer_pm(store, cus["id"], pm_id, "default_payment_method") if pm_id else None
    charge_pm_id = pm_id or cus["invoice_settings"]["default_payment_method"]
    charge_pm = store.payment_methods.get(charge_pm_id or "")
    amount = sum(p["unit_amount"] * q for p, q in prices)
    needs_payment = amount > 0 and not trial_days and behavior != "default_incomplete"
    if needs_payment and charge_pm is None:
        raise StripeError(400, "This customer has no attached payment source or default "
                          "payment method. Please consider adding a default payment method.",
                          code="resource_missing")
    outcome = card_outcome(charge_pm) if needs_payment else None
    if behavior == "error_if_incomplete" and outcome not in (None, "succeeded"):
        raise decline_error(store, None, charge_pm)

    sub = _build_subscription(store, cus, params, prices, trial_days)
    sub["default_payment_method"] = pm_id
    if not trial_days and (outcome == "succeeded" or amount == 0):
        sub["status"] = "active"
    if outcome == "succeeded" and \
            sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = charge_pm["id"]
    store.subscriptions[sub["id"]] = sub
    if trial_days:
        # Imported here: ``trials`` builds on this module.
        from .trials import start_trial

        start_trial(store, sub, params, behavior)
    inv = open_invoice(store, sub, "subscription_create", sub["start_date"],
                       period_end(sub))
    store.emit("customer.subscription.created", sub)
    finalize(store, inv)
    if inv["amount_due"] == 0:
        mark_paid(store, inv)
    elif needs_payment:
        attempt(store, inv, charge_pm)
    return sub


def _build_subscription(store: Store, cus: dict, params: dict, prices: list,
                        trial_days: int) -> dict:
    now = store.now()
    sub = objects.subscription(store, cus["id"], params, now)
    sub["currency"] = prices[0][0]["currency"]
    rec = prices[0][0]["recurring"]
    end = now + trial_days * 86400 if trial_days else \
        objects.add_interval(now, rec["interval"], rec["interval_count"])
    for p, q in prices:
        sub["items"]["data"].append(objects.subscription_item(store, sub["id"], p, q, now, end))
    if trial_days:
        sub.update(status="trialing", trial_start=now, trial_end=end)
    return sub


def schedule_cancel(store: Store, sub: dict, at_period_end: bool) -> None:
    if at_period_end:
        sub.update(cancel_at_period_end=True, cancel_at=period_end(sub),
                   canceled_at=store.now())
        sub["cancellation_details"]["reason"] = "cancellation_requested"
    else:
        sub.update(cancel_at_period_end=False, cancel_at=None, canceled_at=None)
        sub["cancellation_details"]["reason"] = None


def find_item(sub: dict, item_id: str, param: str) -> dict:
    for item in sub["items"]["data"]:
        if item["id"] == item_id:
            return item
    raise StripeError(400, f"No such subscription item: '{item_id}'", code="resource_missing",
                      param=param)


def cancel_now(store: Store, sub: dict, ended_at: int | None = None) -> None:
    now = store.now()
    sub.update(status="canceled", ended_at=ended_at or now, canceled_at=sub["canceled_at"] or now)
    if sub["cancellation_details"]["reason"] is None:
        sub["cancellation_details"]["reason"] = "cancellation_requested"
    store.emit("customer.subscription.deleted", sub)


def ensure_mutable(sub: dict, params: dict) -> None:
    if sub["status"] in ("canceled", "incomplete_expired") and \
            set(params) - {"metadata", "cancellation_details", "expand"}:
        raise StripeError(400, "A canceled subscription can only update its "
                          "cancellation_details and metadata.")
