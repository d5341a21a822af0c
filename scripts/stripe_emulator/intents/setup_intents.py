"""SetupIntents: saving a card for later off-session charges (https://docs.stripe.com/api/setup_intents).

A SetupIntent is created for a customer (``POST /v1/setup_intents``, ``usage`` ``off_session`` by
default) or by a trial subscription as its ``pending_setup_intent`` (``subscriptions/trials.py``), and confirmed
with a payment method. The test cards behave as Stripe documents them for set-ups: most succeed
(the method is attached to the customer, ``setup_intent.succeeded``), including
``pm_card_chargeCustomerFail``, which only fails when charged; ``pm_card_chargeDeclined`` and an
expired card are declined (402 ``card_declined``, ``setup_intent.setup_failed``, the intent waits
for another method); ``pm_card_authenticationRequired`` needs 3-D Secure (``requires_action``,
``setup_intent.requires_action``), which cannot be completed here. Stripe does not make the
method anyone's default: the customer's default is the integration's call. A subscription's
pending SetupIntent that succeeds saves the method on the subscription when it has
``save_default_payment_method=on_subscription``, and is cleared. The caller holds the store lock.
"""

from __future__ import annotations

from ..billing import cards
from ..core.store import Store, StripeError, new_id, public
from ..customers import payment_methods

USAGES = ("off_session", "on_session")


def setup_intent(store: Store, customer_id: str | None, params: dict) -> dict:
    """A new SetupIntent awaiting a payment method (the fields of Stripe's example object)."""
    seti_id = new_id("seti_")
    return {
        "id": seti_id, "object": "setup_intent", "application": None,
        "automatic_payment_methods": None, "cancellation_reason": None,
        "client_secret": f"{seti_id}_secret_{new_id('', 31)}", "created": store.now(),
        "customer": customer_id, "description": params.get("description"), "flow_directions": None,
        "last_setup_error": None, "latest_attempt": None, "livemode": False, "mandate": None,
        "metadata": dict(params.get("metadata") or {}), "next_action": None, "on_behalf_of": None,
        "payment_method": None, "payment_method_configuration_details": None,
        "payment_method_options": {}, "payment_method_types": list(params.get("payment_method_types") or ["card"]),
        "single_use_mandate": None, "status": "requires_payment_method",
        "usage": params.get("usage") or "off_session", "excluded_payment_method_types": None,
        "_subscription": None,
    }


def create(store: Store, params: dict, subscription_id: str | None = None) -> dict:
    """``POST /v1/setup_intents``; ``subscription_id`` makes it that subscription's pending SetupIntent."""
    customer_id = params.get("customer") or None
    if customer_id is not None:
        cus = store.get("customers", customer_id, "customer")
        if cus.get("_deleted"):
            raise StripeError(404, f"No such customer: '{customer_id}'", code="resource_missing",
                              param="customer")
    if params.get("usage") not in (None, *USAGES):
        raise StripeError(400, f"Invalid usage: must be one of {', '.join(USAGES)}", param="usage")
    seti = setup_intent(store, customer_id, params)
    seti["_subscription"] = subscription_id
    store.setup_intents[seti["id"]] = seti
    store.emit("setup_intent.created", seti)
    if params.get("payment_method"):
        seti["payment_method"] = payment_methods.resolve_pm(store, params["payment_method"])["id"]
    if params.get("confirm") in (True, "true"):
        confirm(store, seti, None)
    return seti


def outcome(store: Store, pm: dict) -> str:
    """How setting up ``pm`` ends: ``succeeded``, ``declined`` or ``requires_action``."""
    card = cards.TEST_CARDS.get(pm.get("_test_id"), {})
    if cards.expired(pm, store.now()) or ("decline" in card and not card.get("sets_up")):
        return "declined"
    return "requires_action" if card.get("requires_action") else "succeeded"


def confirm(store: Store, seti: dict, pm_id: str | None) -> dict:
    """``POST /v1/setup_intents/{id}/confirm`` with ``pm_id`` (else the method it was created with)."""
    if seti["status"] in ("succeeded", "canceled"):
        raise StripeError(400, f"You cannot confirm this SetupIntent because it has a status of "
                          f"{seti['status']}.", code="setup_intent_unexpected_state")
    pm_id = pm_id or seti["payment_method"]
    if not pm_id:
        raise StripeError(400, "You cannot confirm this SetupIntent because it's missing a payment "
                          "method.", code="setup_intent_unexpected_state")
    pm = payment_methods.resolve_pm(store, pm_id)
    if pm["customer"] not in (None, seti["customer"]):
        raise StripeError(400, f"The provided PaymentMethod {pm['id']} belongs to another customer.",
                          param="payment_method")
    result = outcome(store, pm)
    if result == "declined":
        _decline(store, seti, pm)
    seti.update(payment_method=pm["id"], last_setup_error=None)
    if result == "requires_action":
        seti.update(status="requires_action", next_action={
            "type": "use_stripe_sdk", "use_stripe_sdk": {"type": "three_d_secure_redirect", "stripe_js": ""}})
        store.emit("setup_intent.requires_action", seti)
        return seti
    if seti["customer"]:
        payment_methods.attach_pm(store, pm, seti["customer"])
    seti.update(status="succeeded", next_action=None)
    store.emit("setup_intent.succeeded", seti)
    _save_on_subscription(store, seti)
    return seti


def _decline(store: Store, seti: dict, pm: dict) -> None:
    error = {"type": "card_error", "code": "card_declined", "decline_code": "generic_decline",
             "message": "Your card was declined.", "payment_method": public(pm)}
    seti.update(status="requires_payment_method", payment_method=None, last_setup_error=error)
    store.emit("setup_intent.setup_failed", seti)
    raise StripeError(402, "Your card was declined.", type="card_error", code="card_declined", param="",
                      decline_code="generic_decline", setup_intent=public(seti), payment_method=public(pm))


def _save_on_subscription(store: Store, seti: dict) -> None:
    """A trial subscription's pending SetupIntent succeeded: the method is saved on it, the intent cleared."""
    sub = store.subscriptions.get(seti["_subscription"] or "")
    if sub is None or sub["pending_setup_intent"] != seti["id"]:
        return
    before = public(sub)
    if sub["payment_settings"]["save_default_payment_method"] == "on_subscription":
        sub["default_payment_method"] = seti["payment_method"]
    sub["pending_setup_intent"] = None
    store.emit("customer.subscription.updated", sub, before)
