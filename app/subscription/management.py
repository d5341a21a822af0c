"""Changing a subscription from the client app: swap (with a preview), seats, cancel, resume.

Provider-first (SPEC 1, CONTRACT "Additions (third round)"): each change takes the per-billable lock
(the one ``/subscription/intent`` takes, so two actions of a billable never interleave at Stripe),
calls Stripe with an idempotency key (``app.idempotency.provider_key``), and writes Stripe's answer
with the writer ``sync`` uses, as of now. The client's request never writes the row. Price and
quantity changes use ``payment_behavior=pending_if_incomplete``: when their invoice is not paid,
Stripe keeps the subscription as it was and holds the change in ``pending_update``
(https://docs.stripe.com/billing/subscriptions/pending-updates), which is ``402 payment_required``
here; a change a pending update cannot hold (a discount, metered items moved) is
``error_if_incomplete``. Notifications still come only from the webhooks that follow. Nothing here commits.
"""
from flask import current_app
from sqlalchemy import delete

from app import presentation
from app.billing import objects, plans, prices, promotions, redemptions
from app.billing.provider import get_provider
from app.billing.provider_errors import ChangeDeclined
from app.billing.statuses import PAUSED_STATUSES, TERMINAL_STATUSES, VALID_STATUSES
from app.extensions import db
from app.idempotency import provider_key
from app.models import ProrationQuote
from app.subscription import current
from app.subscription.errors import NotSubscribed, PaymentRequired, SubscriptionEnded
from app.timeutil import utcnow
from app.usage import plans as usage_plans


def _change_item(billable, action, change, proration_date, promotion_code=None):
    """Apply ``change`` (``{"price"}`` or ``{"quantity"}``) to the one item of the live subscription.

    Returns ``(row, pending_update)``; a change to what the item already has calls nothing but a read.
    Its ``proration_behavior`` is decided here, never by the client (``prices.proration_for``).
    Raises ``PaymentPending`` (409) while an earlier change waits for payment, ``PaymentRequired``
    (402) when Stripe keeps this change pending, after writing its answer. Two kinds of change are
    ``error_if_incomplete`` instead (declined, nothing changes: 402), because a pending update takes
    only the parameters Stripe lists, an item's ``price`` and ``quantity`` among them, no deleted item
    and no discount (https://docs.stripe.com/billing/subscriptions/pending-updates-reference): with
    ``promotion_code`` (a resolved id) the change carries the discount (a discount applied without the
    change would lower what the current price costs); a swap between plans with metered prices moves
    them in the same update (``app.usage.plans.swap_items``), so the plan and its usage prices change
    together or not at all.
    """
    subscription = current.priced(billable)
    if proration_date is not None:
        _spend_proration_date(subscription, proration_date)
    current.refuse_while_pending(billable, subscription)
    item = subscription.licensed_items[0]
    provider = get_provider()
    now_on = {"price": item.provider_price, "quantity": item.quantity or 1}
    wanted = {**now_on, **change}
    if wanted == now_on:
        live = provider.retrieve_subscription(subscription.provider_id)
        return current.write(billable, live), objects.pending_update_of(live)
    behavior = prices.proration_for(provider, now_on["price"], now_on["quantity"], wanted["price"],
                                    wanted["quantity"])
    usage_moves = usage_plans.swap_items(subscription.items, change["price"]) if "price" in change else []
    params = {"items": [{"id": item.provider_id, **change}, *usage_moves],
              "payment_behavior": "error_if_incomplete" if promotion_code or usage_moves else "pending_if_incomplete",
              "proration_behavior": behavior}
    if proration_date is not None:
        params["proration_date"] = proration_date
    if promotion_code:
        params["discounts"] = [{"promotion_code": promotion_code}]
    try:
        live = provider.update_subscription(subscription.provider_id, params, provider_key(billable, action))
    except ChangeDeclined:
        raise PaymentRequired.declined() from None
    # Kept for the person who swapped too, whichever billable they act for (once per person).
    redemptions.remember(billable, promotion_code, subscription.provider_id, redemptions.acting_person())
    row = current.write(billable, live)
    pending = objects.pending_update_of(live)
    # The answer may carry an older pending update (made in the portal, say); this change is refused
    # only if it is not on the item Stripe answered with.
    if not _carries(live, change) and pending is not None and isinstance(live.get("latest_invoice"), dict):
        raise PaymentRequired.for_invoice(live["latest_invoice"])
    return row, pending


def _spend_proration_date(subscription, value):
    """Take a preview's ``proration_date`` for this one change (``current.check_proration_date``: 422 when no
    preview issued it), and drop it so that no second change prorates from it (CONTRACT "Changes to the fifth
    round": "A preview's proration_date serves one swap"); a swap that fails rolls the drop back with it. Under
    the billable's lock (``current.priced``), so two swaps sent together with one date take it once."""
    current.check_proration_date(subscription, value, current.stripe_now(subscription))
    db.session.execute(delete(ProrationQuote).where(ProrationQuote.provider_subscription == subscription.provider_id,
                                                    ProrationQuote.proration_date == value))


def _carries(live, change):
    """Whether the subscription ``live`` has the item ``change`` asked for (its one licensed item)."""
    items = [item for item in objects.items_of(live) if not objects.is_metered(item)]
    found = {"price": objects.price_of(items[0]), "quantity": items[0].get("quantity")} if items else {}
    return all(found.get(name) == value for name, value in change.items())


def swap(billable, price, proration_date=None, promotion_code=None):
    """Move the billable's live subscription to ``price`` (one sold: the request's ``SoldPrice``); return
    ``(Subscription, pending_update or None)``.

    A dearer price, or another interval, is invoiced and charged at once; a cheaper one follows
    ``PROVIDER_PRORATION`` (``prices.proration_for``). ``proration_date`` (Unix seconds, at most 10
    minutes old: a preview's) makes the charge the one the preview showed; ``promotion_code`` (as
    typed) discounts it, resolved before anything changes. Raises ``UnknownPrice`` (in a currency other than the
    subscription's, or unknown to Stripe),
    ``InvalidPromotionCode`` and ``InvalidProrationDate`` (422), ``NotSubscribed`` / ``SubscriptionPastDue`` /
    ``PaymentPending`` / ``Conflict`` (409), ``PaymentRequired`` (402), ``ProviderRejected`` (502)
    and ``ProviderUnavailable`` (503).
    """
    promotion = promotions.resolve(promotion_code, price, billable, _seats(billable))
    return _change_item(billable, "swap", {"price": price}, proration_date, promotion)


def _seats(billable):
    """The seats of the billable's live subscription as stored (1 without one): a promotion code's order."""
    subscription = current.live_subscription(billable.subscriptions)
    return (subscription.quantity if subscription is not None else None) or 1


def set_quantity(billable, quantity):
    """Set the seats of the billable's live subscription; return the ``Subscription``.

    More seats are invoiced and charged at once; fewer follow ``PROVIDER_PRORATION``. Raises as ``swap``.
    """
    return _change_item(billable, "quantity", {"quantity": quantity}, None)[0]


def preview_swap(billable, price, promotion_code=None):
    """Return Stripe's invoice preview of swapping to ``price``: ``{"amount_due", "currency",
    "proration_date", "lines"}``, amounts in minor units, times in Unix seconds.

    The preview asks Stripe for exactly what the swap will send: the same ``proration_behavior``
    (a dearer price: the invoice charged at once; a cheaper one: the next renewal's invoice, which
    carries the credit) and its own ``proration_date``, now, which it returns. A swap sent with it
    within 10 minutes charges what was shown (cashier-stripe#576); with ``promotion_code`` (as
    typed) the discount the swap with it gets. Raises as ``swap``.
    """
    promotion = promotions.resolve(promotion_code, price, billable, _seats(billable))
    subscription = current.priced(billable, lock=False)  # a read at Stripe: nothing changes there, nothing to serialise
    item, provider = subscription.licensed_items[0], get_provider()
    quantity = item.quantity or 1
    now = current.stripe_now(subscription)
    details = {"items": [{"id": item.provider_id, "price": price}, *usage_plans.swap_items(subscription.items, price)],
               "proration_date": now,
               "proration_behavior": prices.proration_for(provider, item.provider_price, quantity, price, quantity)}
    invoice = provider.preview_invoice(subscription.provider_id, details, promotion,
                                       automatic_tax=current_app.config["PROVIDER_AUTOMATIC_TAX"])
    if invoice is None:
        raise NotSubscribed("The subscription will not renew, so a swap has nothing to preview.")
    current.issue_proration_date(subscription, now)
    return {
        "amount_due": invoice.get("amount_due"),
        "currency": invoice.get("currency"),
        **presentation.totals_of(invoice),
        "proration_date": now,
        "lines": [present_line(line) for line in objects.list_data(invoice.get("lines"))],
    }


def present_line(line):
    """Return an invoice line as ``{"description", "amount", "period_start", "period_end"}``."""
    period = line.get("period") or {}
    return {"description": line.get("description"), "amount": line.get("amount"),
            "period_start": period.get("start"), "period_end": period.get("end")}


def cancel(billable, at_period_end=True):
    """Cancel the live subscription at the period's end (a grace period) or now; return the row.

    A ``paused`` subscription (a trial that ended without a card) is cancelled now.

    Cancelling now prorates per ``PROVIDER_PRORATION`` (``none``: no credit; ``create_prorations``:
    the unused time is credited), and an ``active`` subscription with metered items gets a final
    invoice now that bills the usage of the period so far (``invoice_now``). Cancelling now in dunning, or while
    an organisation's seat is held (``app.organizations.seats``), voids the open invoice first. A cancellation
    already scheduled is answered without a provider call.
    Raises ``NotSubscribed`` (409), ``ProviderRejected`` (502), ``ProviderUnavailable`` (503).
    """
    subscriptions = current.locked_subscriptions(billable)
    # A trial paused for want of a card has no period to run out: it can only end now.
    paused = current.paused(subscriptions)
    subscription = current.live_subscription(subscriptions) or paused
    if subscription is None:
        raise NotSubscribed()
    at_period_end = at_period_end and subscription is not paused
    provider = get_provider()
    if at_period_end and subscription.cancel_at_period_end:
        return subscription
    if at_period_end:
        live = provider.update_subscription(subscription.provider_id, {"cancel_at_period_end": True},
                                            provider_key(billable, "cancel"))
    else:
        # In dunning the period was never paid for, and a change Stripe holds in ``pending_update`` (a seat held
        # for an invitee) is not paid yet: its open invoice, the ``latest_invoice`` while the update is pending, is
        # voided first, so that nothing collects it once the subscription is gone (the end's webhook voids a held
        # seat's too, but it may be paid on Stripe's page before it comes). A pending update the row still shows
        # may have expired meanwhile: Stripe says whether it is there, so a renewal's invoice is never voided.
        dunning = subscription.provider_status not in VALID_STATUSES
        if dunning or subscription.pending_expires_at is not None:
            live = provider.retrieve_subscription(subscription.provider_id)
            if dunning or objects.pending_update_of(live) is not None:
                provider.void_latest_invoice(live)
        prorate, invoice_now = prices.cancel_now_terms(subscription.provider_status,
                                                       bool(usage_plans.metered_items(subscription.items)))
        live = provider.cancel_subscription(subscription.provider_id, provider_key(billable, "cancel-now"),
                                            prorate=prorate, invoice_now=invoice_now)
    return current.write(billable, live)


def resume(billable):
    """Withdraw the scheduled cancellation of the billable's newest subscription; return the row.

    Only during the grace period: once it ended (or the provider ended the subscription) this is
    ``SubscriptionEnded`` (409), and the client starts a new subscription with
    ``/subscription/intent`` (pay-rails/pay#221). Nothing scheduled: answered without a provider
    call. Raises ``NotSubscribed`` (409) without a subscription, or when it is paused (a card
    resumes it, not this).
    """
    subscriptions = [s for s in current.locked_subscriptions(billable) if s.provider_status != "incomplete"]
    subscription = plans.newest(subscriptions)
    if subscription is None:
        raise NotSubscribed()
    ended = subscription.ends_at is not None and subscription.ends_at <= utcnow()
    if subscription.provider_status in TERMINAL_STATUSES or ended:
        raise SubscriptionEnded()
    if subscription.provider_status in PAUSED_STATUSES:
        raise NotSubscribed.paused()
    if subscription.ends_at is None:
        return subscription
    # A cancellation scheduled with cancel_at (newer portals) is withdrawn by clearing cancel_at.
    params = {"cancel_at_period_end": False} if subscription.cancel_at_period_end else {"cancel_at": ""}
    return current.write(billable, get_provider().update_subscription(subscription.provider_id, params,
                                                           provider_key(billable, "resume")))
