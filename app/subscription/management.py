"""Changing a subscription from the client app: swap (with a preview), seats, cancel, resume.

Provider-first (SPEC 1, CONTRACT "Additions (third round)"): each change takes the per-user lock
(the one ``/subscription/intent`` takes, so two actions of a user never interleave at Stripe),
calls Stripe with an idempotency key (``app.idempotency.provider_key``), and writes Stripe's answer
with the writer ``sync`` uses, as of now. The client's request never writes the row. Price and
quantity changes use ``payment_behavior=pending_if_incomplete``: when their invoice is not paid,
Stripe keeps the subscription as it was and holds the change in ``pending_update``
(https://docs.stripe.com/billing/subscriptions/pending-updates), which is ``402 payment_required``
here. Notifications still come only from the webhooks that follow. Nothing here commits.
"""
from flask import current_app

from app.billing import objects, plans, state
from app.billing.provider import get_provider
from app.billing.statuses import DUNNING_STATUSES, LIVE_STATUSES, PAUSED_STATUSES, TERMINAL_STATUSES
from app.errors import Conflict, UnknownPrice
from app.extensions import db
from app.idempotency import provider_key
from app.models.user import lock_user
from app.subscription.errors import NotSubscribed, PaymentRequired, SubscriptionEnded, SubscriptionPastDue
from app.timeutil import utcnow


def _locked_subscriptions(user):
    """Lock the user and return their subscriptions as stored now (a webhook may have written since)."""
    lock_user(user)
    db.session.expire(user, ["subscriptions"])
    return user.subscriptions


def live_subscription(subscriptions):
    """Return the newest subscription in a live status (paid for, or in dunning), or ``None``."""
    return plans.newest([s for s in subscriptions if s.provider_status in LIVE_STATUSES])


def _changeable(user, lock=True):
    subscription = live_subscription(_locked_subscriptions(user) if lock else user.subscriptions)
    if subscription is None:
        raise NotSubscribed()
    return subscription


def _priced(user, lock=True):
    """The live subscription whose price or seats may change: not in dunning, one price."""
    subscription = _changeable(user, lock)
    if subscription.provider_status in DUNNING_STATUSES:
        raise SubscriptionPastDue.for_status(subscription.provider_status)
    if len(subscription.items) != 1:
        raise Conflict(f"The subscription has {len(subscription.items)} prices; only a single-price "
                       "subscription can be changed here.", details={"items": len(subscription.items)})
    return subscription


def _write(user, live):
    """Write Stripe's answer as ``sync`` does (now) and recompute the plan; return the row."""
    subscription = state.apply_subscription(user, live, state.live_as_of())
    plans.recompute_plan(user)
    return subscription


def pending_update_of(live):
    """Return ``{"price", "expires_at"}`` of a subscription's pending update (Unix seconds), or ``None``."""
    pending = live.get("pending_update")
    if not isinstance(pending, dict):
        return None
    items = pending.get("subscription_items") or []
    return {"price": objects.price_of(items[0]) if items else None, "expires_at": pending.get("expires_at")}


def _change_item(user, action, change, proration, proration_date):
    """Apply ``change`` (``{"price"}`` or ``{"quantity"}``) to the one item of the live subscription.

    Returns ``(row, pending_update)``; a change to what the item already has calls nothing but a read.
    Raises ``PaymentRequired`` (402) when Stripe keeps the change pending, after writing its answer.
    """
    subscription = _priced(user)
    item = subscription.items[0]
    provider = get_provider()
    current = {"price": item.provider_price, "quantity": item.quantity or 1}
    if all(current[name] == value for name, value in change.items()):
        live = provider.retrieve_subscription(subscription.provider_id)
        return _write(user, live), pending_update_of(live)
    params = {"items": [{"id": item.provider_id, **change}], "payment_behavior": "pending_if_incomplete",
              "proration_behavior": proration or current_app.config["PROVIDER_PRORATION"]}
    if proration_date is not None:
        params["proration_date"] = proration_date
    live = provider.update_subscription(subscription.provider_id, params, provider_key(user, action))
    row = _write(user, live)
    pending = pending_update_of(live)
    # The answer may carry an older pending update (a swap still unpaid); this change is refused
    # only if it is not on the item Stripe answered with.
    if not _carries(live, change) and pending is not None and isinstance(live.get("latest_invoice"), dict):
        raise PaymentRequired.for_invoice(live["latest_invoice"])
    return row, pending


def _carries(live, change):
    """Whether the subscription ``live`` has the item ``change`` asked for (its one item)."""
    items = objects.items_of(live)
    found = {"price": objects.price_of(items[0]), "quantity": items[0].get("quantity")} if items else {}
    return all(found.get(name) == value for name, value in change.items())


def swap(user, price, proration=None, proration_date=None):
    """Move the user's live subscription to ``price``; return ``(Subscription, pending_update or None)``.

    ``proration``: Stripe's ``proration_behavior`` (default ``PROVIDER_PRORATION``); ``proration_date``
    (Unix seconds) makes the charge the one a preview showed. Raises ``UnknownPrice`` (422),
    ``NotSubscribed`` / ``SubscriptionPastDue`` / ``Conflict`` (409), ``PaymentRequired`` (402),
    ``ProviderRejected`` (502) and ``ProviderUnavailable`` (503).
    """
    if price not in current_app.config["PROVIDER_PLANS"]:
        raise UnknownPrice.for_price(price)
    return _change_item(user, "swap", {"price": price}, proration, proration_date)


def set_quantity(user, quantity, proration=None):
    """Set the seats of the user's live subscription; return the ``Subscription``. Raises as ``swap``."""
    return _change_item(user, "quantity", {"quantity": quantity}, proration, None)[0]


def preview_swap(user, price, proration=None):
    """Return Stripe's invoice preview of swapping to ``price``: ``{"amount_due", "currency",
    "proration_date", "lines"}``, amounts in minor units, times in Unix seconds.

    Pass ``proration_date`` to the swap so that it charges what was shown (cashier-stripe#576): it
    is the date Stripe prorated from, read from the preview's proration lines (Stripe's clock, which
    a test clock may have moved), else the preview's creation. Raises as ``swap``.
    """
    if price not in current_app.config["PROVIDER_PLANS"]:
        raise UnknownPrice.for_price(price)
    subscription = _priced(user, lock=False)  # a read: nothing changes, nothing to serialise
    details = {"items": [{"id": subscription.items[0].provider_id, "price": price}],
               "proration_behavior": proration or current_app.config["PROVIDER_PRORATION"]}
    invoice = get_provider().preview_invoice(subscription.provider_id, details)
    if invoice is None:
        raise NotSubscribed("The subscription will not renew, so a swap has nothing to preview.")
    lines = objects.list_data(invoice.get("lines"))
    prorated = [line for line in lines if _is_proration(line)]
    return {
        "amount_due": invoice.get("amount_due"),
        "currency": invoice.get("currency"),
        "proration_date": (prorated[0].get("period") or {}).get("start") if prorated else invoice.get("created"),
        "lines": [present_line(line) for line in lines],
    }


def _is_proration(line):
    details = (line.get("parent") or {}).get("subscription_item_details") or {}
    return bool(details.get("proration") or line.get("proration"))


def present_line(line):
    """Return an invoice line as ``{"description", "amount", "period_start", "period_end"}``."""
    period = line.get("period") or {}
    return {"description": line.get("description"), "amount": line.get("amount"),
            "period_start": period.get("start"), "period_end": period.get("end")}


def cancel(user, at_period_end=True):
    """Cancel the live subscription at the period's end (a grace period) or now; return the row.

    A ``paused`` subscription (a trial that ended without a card) is cancelled now.

    Cancelling now prorates per ``PROVIDER_PRORATION`` (``none``: no credit; ``always_invoice``: the
    final invoice at once). A cancellation already scheduled is answered without a provider call.
    Raises ``NotSubscribed`` (409), ``ProviderRejected`` (502), ``ProviderUnavailable`` (503).
    """
    subscriptions = _locked_subscriptions(user)
    # A trial paused for want of a card has no period to run out: it can only end now.
    paused = plans.newest([s for s in subscriptions if s.provider_status in PAUSED_STATUSES])
    subscription = live_subscription(subscriptions) or paused
    if subscription is None:
        raise NotSubscribed()
    at_period_end = at_period_end and subscription is not paused
    provider = get_provider()
    if at_period_end and subscription.cancel_at_period_end:
        return subscription
    if at_period_end:
        live = provider.update_subscription(subscription.provider_id, {"cancel_at_period_end": True},
                                            provider_key(user, "cancel"))
    else:
        behavior = current_app.config["PROVIDER_PRORATION"]
        live = provider.cancel_subscription(subscription.provider_id, provider_key(user, "cancel-now"),
                                            prorate=behavior != "none", invoice_now=behavior == "always_invoice")
    return _write(user, live)


def resume(user):
    """Withdraw the scheduled cancellation of the user's newest subscription; return the row.

    Only during the grace period: once it ended (or the provider ended the subscription) this is
    ``SubscriptionEnded`` (409), and the client starts a new subscription with
    ``/subscription/intent`` (pay-rails/pay#221). Nothing scheduled: answered without a provider
    call. Raises ``NotSubscribed`` (409) without a subscription.
    """
    subscriptions = [s for s in _locked_subscriptions(user) if s.provider_status != "incomplete"]
    subscription = plans.newest(subscriptions)
    if subscription is None:
        raise NotSubscribed()
    ended = subscription.ends_at is not None and subscription.ends_at <= utcnow()
    if subscription.provider_status in TERMINAL_STATUSES or ended:
        raise SubscriptionEnded()
    if subscription.ends_at is None:
        return subscription
    # A cancellation scheduled with cancel_at (newer portals) is withdrawn by clearing cancel_at.
    params = {"cancel_at_period_end": False} if subscription.cancel_at_period_end else {"cancel_at": ""}
    return _write(user, get_provider().update_subscription(subscription.provider_id, params,
                                                           provider_key(user, "resume")))
