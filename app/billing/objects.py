"""Reading provider objects in every shape Stripe has sent them (CONTRACT "Read both object shapes").

A reference may be an id string or an expanded object; the period end may sit on the subscription
(API before 2025-03-31) or on its items (later); an invoice's subscription may sit at the top level
or under ``parent.subscription_details``.

A signed event is still only JSON. A subscription object is checked before anything here reads
it (``app.webhook.schemas``: what cannot be stored is refused whole). Invoices, customers and
``previous_attributes`` are not stored, so their readers here take a field of another type than
documented as absent, never as an exception (a 500, and the provider retrying the same body for days).
"""
from app.billing.statuses import TERMINAL_STATUSES
from app.timeutil import from_timestamp


def ref_id(value):
    """Return the id (a non-empty string) of a reference that may be an id, an expanded object or ``None``.

    Anything else, such as a number where an id belongs, is ``None``: such a value never names a
    provider object, and comparing it with a string column fails on PostgreSQL (a 500).
    """
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def customer_id_of(obj):
    """Return the customer id (a string, or ``None``) an event's object belongs to (a customer is its own)."""
    if obj.get("object") == "customer":
        return ref_id(obj)
    return ref_id(obj.get("customer"))


def text_of(value):
    """Return ``value`` if it is a string (a status, say), else ``None``."""
    return value if isinstance(value, str) else None


def list_data(value):
    """Return the objects of a list object (``{"object": "list", "data": [...]}``)."""
    data = value.get("data") if isinstance(value, dict) else None
    return [entry for entry in data if isinstance(entry, dict)] if isinstance(data, list) else []


def items_of(subscription):
    """Return the subscription's items; one without an id names nothing that could be stored."""
    return [item for item in list_data(subscription.get("items")) if ref_id(item.get("id"))]


def is_metered(item):
    """Whether a subscription item's price is metered (``recurring.usage_type``; its usage is billed)."""
    price = item.get("price") if isinstance(item.get("price"), dict) else {}
    return (price.get("recurring") or {}).get("usage_type") == "metered"


def price_of(item):
    """Return an item's price id (``price``, or the legacy ``plan``)."""
    return ref_id(item.get("price")) or ref_id(item.get("plan"))


def pending_update_of(subscription):
    """Return ``{"price", "quantity", "expires_at"}`` of a subscription's ``pending_update`` (its one
    item; ``expires_at`` in Unix seconds), or ``None`` when no change waits for payment."""
    pending = subscription.get("pending_update")
    if not isinstance(pending, dict):
        return None
    items = [item for item in pending.get("subscription_items") or () if isinstance(item, dict)]
    quantity = items[0].get("quantity") if items else None
    expires_at = pending.get("expires_at")
    return {"price": price_of(items[0]) if items else None,
            "quantity": quantity if isinstance(quantity, int) else None,
            "expires_at": expires_at if isinstance(expires_at, int) else None}


def product_of(item):
    price = item.get("price") if isinstance(item.get("price"), dict) else item.get("plan")
    return ref_id(price.get("product")) if isinstance(price, dict) else None


def current_period_end(subscription):
    """Return the current period end: on the subscription, else the latest one on its items."""
    if subscription.get("current_period_end"):
        return from_timestamp(subscription["current_period_end"])
    ends = [item["current_period_end"] for item in items_of(subscription) if item.get("current_period_end")]
    return from_timestamp(max(ends)) if ends else None


def ends_at(subscription, period_end):
    """Return when access ends: the end of a terminal subscription, else a scheduled cancellation."""
    if subscription.get("status") in TERMINAL_STATUSES:
        return from_timestamp(subscription.get("ended_at") or subscription.get("canceled_at"))
    if subscription.get("cancel_at_period_end"):
        return from_timestamp(subscription.get("cancel_at")) or period_end
    return from_timestamp(subscription.get("cancel_at"))


def subscription_id_of_invoice(invoice):
    """Return the subscription an invoice bills, in the old (top-level) or new (``parent``) shape."""
    parent = invoice.get("parent")
    details = parent.get("subscription_details") if isinstance(parent, dict) else None
    nested = details.get("subscription") if isinstance(details, dict) else None
    return ref_id(invoice.get("subscription")) or ref_id(nested)


def payment_intents_of_invoice(invoice):
    """Return the ids of the payment intents that paid an invoice: the legacy field, then ``payments``."""
    payments = [payment.get("payment") for payment in list_data(invoice.get("payments"))]
    intents = [invoice.get("payment_intent")] + [p.get("payment_intent") for p in payments if isinstance(p, dict)]
    return list(filter(None, map(ref_id, intents)))


def client_secret_of(subscription):
    """Return the client secret a client confirms for a new subscription, or ``None``.

    The first invoice's payment (a PaymentIntent's, ``pi_..._secret_...``); when nothing is due
    (a trial), the pending SetupIntent's (``seti_..._secret_...``) that saves the card for later.
    Both need their field expanded.
    """
    invoice = subscription.get("latest_invoice")
    invoice = invoice if isinstance(invoice, dict) else {}
    confirmation = invoice.get("confirmation_secret") or {}
    if confirmation.get("client_secret"):
        return confirmation["client_secret"]
    for intent in (invoice.get("payment_intent"), subscription.get("pending_setup_intent")):
        if isinstance(intent, dict) and intent.get("client_secret"):
            return intent["client_secret"]
    return None


def card_of(payment_method):
    """Return ``(brand, last4)`` of a payment method (a card's brand, else the method's type)."""
    if not isinstance(payment_method, dict):
        return None, None
    kind = payment_method.get("type") or "card"
    details = payment_method.get(kind) or {}
    return (details.get("brand") or kind), details.get("last4")


def card_expiry_of(payment_method):
    """Return ``(exp_month, exp_year)`` of a card payment method, else ``(None, None)``."""
    card = payment_method.get("card") if isinstance(payment_method, dict) else None
    month, year = (card.get("exp_month"), card.get("exp_year")) if isinstance(card, dict) else (None, None)
    valid = isinstance(month, int) and isinstance(year, int) and 1 <= month <= 12 and 2000 <= year <= 9999
    return (month, year) if valid else (None, None)


def discount_of(subscription, known=None):
    """Return the subscription's first discount as ``{"id", "coupon": {"id", "percent_off", "amount_off",
    "currency", "duration", "duration_in_months"}, "promotion_code", "end"}``, or ``None`` without one.

    ``discounts`` holds ids unless expanded (``discounts.source.coupon``): a webhook's id that is
    ``known``'s (the stored discount) keeps it; ``UNREAD`` when only Stripe can say what it is.
    """
    discounts = subscription.get("discounts") or []
    if not discounts:
        return None
    first = discounts[0]
    if isinstance(first, str):
        return known if known and known.get("id") == first else UNREAD
    coupon = (first.get("source") or {}).get("coupon") or first.get("coupon")
    if not isinstance(coupon, dict):
        return known if known and known.get("id") == first.get("id") else UNREAD
    return {"id": first.get("id"), "promotion_code": ref_id(first.get("promotion_code")), "end": first.get("end"),
            "coupon": {name: coupon.get(name) for name in ("id", "percent_off", "amount_off", "currency", "duration",
                                                             "duration_in_months")}}


# A discount the payload names by id only, unknown to the row: the live subscription says what it is.
UNREAD = {"unread": True}
