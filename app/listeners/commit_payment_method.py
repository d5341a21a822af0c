"""``CommitPaymentMethod``: promote the card that paid to the customer default (SPEC 6 listener rule 2)."""
import logging

from app.billing import objects, payment_methods, state
from app.billing.provider import get_provider
from app.errors import ProviderRejected
from app.signals import webhook_handled
from app.timeutil import from_timestamp

log = logging.getLogger(__name__)


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


# Event type -> how to find the method that paid (STYLE rule 8).
PAYING_METHOD = {
    "customer.subscription.created": _from_subscription,
    "customer.subscription.updated": _from_subscription,
    "invoice.paid": _from_invoice,
    "invoice.payment_succeeded": _from_invoice,
}


@webhook_handled.connect
def commit_payment_method(sender, event, **extra):
    """Promote the paying method and mirror brand and last four; ``customer.updated`` refreshes them."""
    obj = event["data"]["object"]
    if event["type"] not in PAYING_METHOD and event["type"] != "customer.updated":
        return
    user = extra.get("user") or state.user_for_customer(objects.customer_id_of(obj))
    if user is None:
        return
    if event["type"] == "customer.updated":
        if "invoice_settings" in (event["data"].get("previous_attributes") or {}):
            # Events arrive out of order: a late update's default may be replaced already, and
            # its payload would bring the old card back. The live customer holds the current one.
            provider = get_provider()
            payment_methods.refresh_from_customer(provider, user, provider.retrieve_customer(user.provider_id))
        return
    method = PAYING_METHOD[event["type"]](user, event)
    if method:
        payment_methods.promote(get_provider(), user, method)
