"""Checkout Sessions in ``subscription`` mode (https://docs.stripe.com/api/checkout/sessions).

A session is ``open`` until the customer completes it with a card, on the hosted page (``url``)
or with ``POST /_emulator/checkout_sessions/{id}/complete``. Completing it does what Stripe does:
the card is attached to the customer, the subscription is created and paid at once with it (a
Checkout subscription is never ``incomplete``: the payment cleared before it exists), then
``checkout.session.completed`` is sent after the subscription's and invoice's own events.

A card Stripe would decline is a 402 ``card_declined`` before anything happens, with or without a
trial: the session stays open, no card is attached, no subscription exists, nothing is charged. With
a trial Checkout saves the card with a SetupIntent, whose card check declines the same test cards
(https://docs.stripe.com/payments/checkout/free-trials, https://docs.stripe.com/testing#declined-payments);
a card that sets up but fails its charges (``pm_card_chargeCustomerFail``) passes that check.
"""

from __future__ import annotations

from ..billing import cards
from ..core.store import Store, StripeError, new_id
from ..customers import models as customer_models
from ..customers import payment_methods
from ..customers.models import live_customer
from ..discounts import models as discount_models
from ..intents import setup_intents
from ..products.models import metered, subscribable
from ..subscriptions import models as subscriptions
from ..subscriptions import rules as subscription_rules


def _line_item(store: Store, item: dict, i: int) -> dict:
    """A line as the subscription's item: a metered price has no quantity (Stripe refuses one); a licensed
    price's is at least 1, though a subscription's item may have 0: Checkout refuses 0 with "This value must
    be greater than or equal to 1." (https://github.com/stripe/openapi/issues/93)."""
    p = store.get("prices", item.get("price"), f"line_items[{i}][price]")
    if metered(p):
        subscriptions.item_quantity(p, item, i)  # refuses a quantity
        return {"price": item["price"]}
    quantity = subscriptions.item_quantity(p, item, i)
    if quantity is not None and quantity < 1:
        raise StripeError(400, "This value must be greater than or equal to 1.", code="parameter_invalid_integer",
                          param=f"line_items[{i}][quantity]")
    return {"price": item["price"], "quantity": quantity}


def create_session(store: Store, params: dict) -> dict:
    if params.get("mode") != "subscription":
        raise StripeError(400, "Only mode=subscription is emulated.", param="mode")
    cus = live_customer(store, params.get("customer"), "customer")
    if not params.get("line_items"):
        raise StripeError(400, "line_items is required in subscription mode.", param="line_items")
    prices = []
    for i, item in enumerate(params["line_items"]):
        # As a subscription takes them: active, recurring, one currency (``subscribable``), one interval.
        prices.append(subscribable(store, item.get("price"), f"line_items[{i}][price]",
                                   prices[0]["currency"] if prices else None))
    subscription_rules.check_one_interval(prices)
    data = params.get("subscription_data") or {}
    subscription_rules.billing_mode(data.get("billing_mode"), "subscription_data[billing_mode][type]")
    subscription_rules.check_trial_days(data.get("trial_period_days"), "subscription_data[trial_period_days]", least=1)
    if params.get("discounts") and params.get("allow_promotion_codes"):
        raise StripeError(400, "You may only specify one of these parameters: allow_promotion_codes, discounts.",
                          param="allow_promotion_codes")
    _check_discounts(store, params.get("discounts") or [], cus["id"])
    session_id = new_id("cs_test_", 58)
    session = {
        "id": session_id, "object": "checkout.session", "allow_promotion_codes": params.get("allow_promotion_codes"),
        "amount_subtotal": None, "amount_total": None,
        "automatic_tax": {"enabled": bool((params.get("automatic_tax") or {}).get("enabled")), "liability": None,
                          "provider": None, "status": None},
        "cancel_url": params.get("cancel_url"), "client_reference_id": params.get("client_reference_id"),
        "created": store.now(), "currency": None, "customer": cus["id"], "customer_email": None,
        "discounts": list(params.get("discounts") or []), "expires_at": store.now() + 86400,
        "invoice": None, "livemode": False, "metadata": dict(params.get("metadata") or {}),
        "mode": "subscription", "payment_status": "unpaid", "status": "open",
        "subscription": None, "success_url": params.get("success_url"),
        "url": f"{store.base_url}/checkout/{session_id}",
        "_line_items": [_line_item(store, item, i) for i, item in enumerate(params["line_items"])],
        "_subscription_data": dict(params.get("subscription_data") or {}),
        "locale": params.get("locale"), "customer_details": None,
        "customer_update": dict(params.get("customer_update") or {}) or None,
        "_clock": store.active_clock,
    }
    store.checkout_sessions[session_id] = session
    return session


def _check_discounts(store: Store, entries: list, customer_id: str) -> None:
    """At most one discount ("You can only specify up to one", the SDK's ``discounts``), each one that exists
    and, a promotion code, that the customer may redeem now: refused at creation, not when paid."""
    if len(entries) > 1:
        raise StripeError(400, "You can only specify up to one discount.", param="discounts")
    for i, entry in enumerate(entries):
        discount_models.entry_terms(store, entry, customer_id, f"discounts[{i}]")


def _expire(store: Store, session: dict) -> None:
    """The open ``session`` becomes ``expired`` and ``checkout.session.expired`` is sent, dated in the session's
    time (https://docs.stripe.com/api/events/types#event_types-checkout.session.expired)."""
    with store.on_clock(session.get("_clock")):  # in the time it was created in, whichever clock the customer is on now
        session["status"] = "expired"
        store.emit("checkout.session.expired", session)


def expire_if_due(store: Store, session: dict) -> dict:
    """An open session past its ``expires_at`` is ``expired``, as Stripe expires it then
    (https://docs.stripe.com/api/checkout/sessions/object#checkout_session_object-expires_at). Its clock's
    advance expires it (``expire_due``); a session read after real time passed it expires when read. Returns
    the session."""
    with store.on_clock(session.get("_clock")):
        due = session["status"] == "open" and store.now() >= session["expires_at"]
    if due:
        _expire(store, session)
    return session


def expire_due(store: Store, clock_id: str | None) -> None:
    """Expire the open sessions of the clock ``clock_id`` (``None``: the emulator's own) that its advance took past
    their ``expires_at``, oldest first."""
    for session in list(store.checkout_sessions.values()):
        if session.get("_clock") == clock_id:
            expire_if_due(store, session)


def expire(store: Store, session: dict) -> dict:
    """Expire an ``open`` session at once: its page can no longer be paid
    (https://docs.stripe.com/api/checkout/sessions/expire: "A Checkout Session can be expired when it is in
    one of these statuses: open"; otherwise Stripe "returns an error"). Returns the session."""
    if expire_if_due(store, session)["status"] != "open":
        raise StripeError(400, f"This Checkout Session is {session['status']}: only an open one can be expired.")
    _expire(store, session)
    return session


def complete(store: Store, session: dict, pm_id: str, promotion_code: str | None = None,
             address: dict | None = None) -> dict:
    """Pay the open session with ``pm_id`` (a test card id): the subscription is created, paid, announced.

    ``promotion_code`` (an id) is what the customer entered on the page when the session allows codes;
    ``address`` (``country``, ``postal_code``) the billing address, kept on the session's ``customer_details``,
    and saved to the customer with ``customer_update[address]=auto``
    (https://docs.stripe.com/api/checkout/sessions/create#create_checkout_session-customer_update-address).
    """
    if expire_if_due(store, session)["status"] != "open":
        raise StripeError(400, f"This Checkout Session is {session['status']}.", code="checkout_session_not_open")
    data = session["_subscription_data"]
    pm = payment_methods.resolve_pm(store, pm_id)
    check = setup_intents.outcome(store, pm) if data.get("trial_period_days") else cards.card_outcome(pm, store.now())
    if check != "succeeded":
        raise cards.decline_error(store, None, pm)
    pm = payment_methods.attach_pm(store, pm, session["customer"])
    _save_address(store, session, address)
    discounts = session["discounts"] or ([{"promotion_code": promotion_code}] if promotion_code else [])
    params = {"customer": session["customer"], "items": session["_line_items"], "default_payment_method": pm["id"],
              "billing_mode": dict(data.get("billing_mode") or {}),  # none: flexible, Stripe's default
              "payment_behavior": "error_if_incomplete", "metadata": dict(data.get("metadata") or {}),
              "payment_settings": {"save_default_payment_method": "on_subscription"}}
    if discounts:
        params["discounts"] = discounts
    if session["automatic_tax"]["enabled"]:
        params["automatic_tax"] = {"enabled": True}
    if data.get("trial_period_days"):
        params["trial_period_days"] = data["trial_period_days"]
    sub = subscriptions.create_subscription(store, params)
    inv = store.invoices[sub["latest_invoice"]]
    # A trial's payment "is delayed to a future date": ``no_payment_required`` (the session's ``payment_status``).
    paid = inv["status"] == "paid" and not data.get("trial_period_days")
    session.update(status="complete", payment_status="paid" if paid else "no_payment_required",
                   subscription=sub["id"], invoice=inv["id"], amount_subtotal=inv["subtotal"],
                   amount_total=inv["total"], currency=inv["currency"])
    store.emit("checkout.session.completed", session)
    return session


def _save_address(store: Store, session: dict, address: dict | None) -> None:
    if not address:
        return
    full = {key: address.get(key) for key in customer_models.ADDRESS_FIELDS}
    session["customer_details"] = {"address": full, "email": None, "name": None, "phone": None,
                                   "tax_exempt": "none", "tax_ids": []}
    if (session["customer_update"] or {}).get("address") == "auto":
        customer_models.update(store, store.customers[session["customer"]], {"address": full})
