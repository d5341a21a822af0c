"""``CommitPaymentMethod``: promote the card that paid to the customer default (SPEC 6 listener rule 2).

A card saved with a SetupIntent (``setup_intent.succeeded``) becomes the default of the customer
and of the user's subscriptions, and pays or resumes what waits for it (``app.billing.card_change``).
It also tells the user, at a renewal, that the card on file expires within 30 days
(``card_expiring``): Stripe's own ``customer.source.expiring`` is sent only for legacy Card and
Source objects, never for the PaymentMethods this service saves (README "Notifications").
"""
import logging
from datetime import timedelta

from app.billing import card_change, objects, payment_methods, state
from app.billing.events import COMMIT_PAYMENT_METHOD, EXPECTED_OBJECT, handled_by, is_twin
from app.billing.provider import get_provider
from app.errors import ProviderRejected
from app.notifications import announce_trial, notify
from app.signals import webhook_handled
from app.timeutil import from_timestamp

log = logging.getLogger(__name__)

EVENT_TYPES = handled_by(COMMIT_PAYMENT_METHOD)

# How far ahead of a renewal a card's expiry is worth telling the user about (issue 10).
CARD_EXPIRING_WITHIN = timedelta(days=30)


def _from_subscription(user, event):
    obj, previous = event["data"]["object"], event["data"].get("previous_attributes") or {}
    # Only when the method or the status moved: every other update leaves the card as it was.
    moved = event["type"] == "customer.subscription.created" or {"default_payment_method", "status"} & set(previous)
    if not moved:
        return None
    # The row was just written by the controller and holds the newest state known, also when
    # this event arrived late or tied with another: its method is the one that pays now.
    row = state.subscription_of(user, obj.get("id"))
    return row.default_payment_method if row is not None else objects.ref_id(obj.get("default_payment_method"))


def _from_invoice(user, event):
    invoice = event["data"]["object"]
    subscription_id = objects.subscription_id_of_invoice(invoice)
    if not subscription_id:
        return None  # a one-off invoice says nothing about the subscription's card
    row = state.subscription_of(user, subscription_id)
    if row is not None and state.is_stale(row, from_timestamp(event["created"])):
        # A late invoice must not bring back a card replaced since: promote the current one.
        return row.default_payment_method
    method = objects.ref_id(invoice.get("default_payment_method"))
    if method:
        return method
    intents = objects.payment_intents_of_invoice(invoice)
    if not intents:
        return None
    try:
        intent = get_provider().retrieve_payment_intent(intents[0])
    except ProviderRejected:
        # The provider does not know the intent (any more): a refusal is final, and failing the
        # webhook would repeat it on every retry for days. The subscription's updates carry the card.
        log.warning("payment intent %s of invoice %s not found", intents[0], invoice.get("id"))
        return None
    return objects.ref_id(intent.get("payment_method"))


def _card_expiring(user, event):
    """Notify ``card_expiring`` when a renewal was paid and the card on file expires within 30 days."""
    invoice = event["data"]["object"]
    subscription = objects.subscription_id_of_invoice(invoice)
    # On the primary type only: Stripe sends invoice.paid and its legacy twin for one payment.
    if is_twin(event["type"]) or invoice.get("billing_reason") != "subscription_cycle" or not subscription:
        return
    expires_at = payment_methods.card_expires_at(user)
    if expires_at is None or expires_at > from_timestamp(event["created"]) + CARD_EXPIRING_WITHIN:
        return
    notify(user, event["id"], "card_expiring", {
        "subscription": subscription, "invoice": objects.ref_id(invoice.get("id")), "brand": user.pm_type,
        "last4": user.pm_last_four, "exp_month": user.pm_exp_month, "exp_year": user.pm_exp_year})


def _customer_updated(user, event):
    if "invoice_settings" in (event["data"].get("previous_attributes") or {}):
        # Events arrive out of order: a late update's default may be replaced already, and
        # its payload would bring the old card back. The live customer holds the current one.
        provider = get_provider()
        payment_methods.refresh_from_customer(provider, user, provider.retrieve_customer(user.provider_id))


def _paid_with(find_method, after=None):
    def act(user, event):
        method = find_method(user, event)
        if method:
            payment_methods.promote(get_provider(), user, method)
        if after is not None:
            after(user, event)
    return act


def _setup_succeeded(user, event):
    # A trial starts for the customer when its card is saved and accepted (CONTRACT "Changes to the
    # fourth round"); one the card-fingerprint rule ended at once is a paid subscription from now.
    for subscription, outcome in card_change.adopt(get_provider(), user, event):
        announce_trial(user, event["id"], subscription, ended=outcome == card_change.TRIAL_ENDED)


# The object an event carries -> what to do with it (STYLE rule 8). Which event types reach it
# is ``app.billing.events``' table.
ACTIONS = {
    "subscription": _paid_with(_from_subscription),
    "invoice": _paid_with(_from_invoice, after=_card_expiring),
    "customer": _customer_updated,
    "setup_intent": _setup_succeeded,
}


@webhook_handled.connect
def commit_payment_method(sender, event, **extra):
    """Promote the paying method and mirror the card; ``customer.updated`` refreshes it; a saved card
    pays from now on; warn of expiry.

    Acts on the types ``app.billing.events`` names for it and returns ``True`` when it did
    (blinker hands each receiver's result back to the sender).
    """
    obj = event["data"]["object"]
    if event["type"] not in EVENT_TYPES:
        return False
    user = extra.get("user") or state.user_for_customer(objects.customer_id_of(obj))
    if user is None:
        return False
    ACTIONS[EXPECTED_OBJECT[event["type"]]](user, event)
    return True
