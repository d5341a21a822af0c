"""What a change of price or seats costs, decided from the prices' own terms as Stripe has them.

CONTRACT "Changes to the third round": a change that costs money now (a dearer price, more seats,
another interval) is invoiced at once (``always_invoice``, with ``pending_if_incomplete``: paid, or
nothing changes); a change that costs less follows ``PROVIDER_PRORATION``. The client never says
which. The decision reads the prices' ``unit_amount``, ``currency`` and ``recurring`` interval:
Stripe never changes those on a price (https://docs.stripe.com/api/prices/update lists what can
change: ``active``, ``nickname``, ``metadata``, ...), so each price is read from Stripe once per
process and kept. Whether a price is still active is left to Stripe, which refuses an inactive one
(``UnknownPrice``). No money is computed here: Stripe's invoice does the arithmetic.
"""
from flask import current_app

from app.billing.statuses import VALID_STATUSES
from app.errors import UnknownPrice

INVOICE_AT_ONCE = "always_invoice"


def terms(provider, price_id):
    """Return ``{"currency", "unit_amount", "interval", "interval_count", "product"}`` of a price (read once, kept).

    ``unit_amount`` is in minor units, or ``None`` for a price without one (tiers, metered usage).
    Raises ``UnknownPrice`` (422) when Stripe knows no such price, ``ProviderUnavailable`` (503).
    """
    cache = current_app.extensions.setdefault("price_terms", {})
    if price_id not in cache:
        price = provider.retrieve_price(price_id)
        recurring = price.get("recurring") or {}
        product = price.get("product")
        cache[price_id] = {"currency": price.get("currency"), "unit_amount": price.get("unit_amount"),
                           "interval": recurring.get("interval"), "interval_count": recurring.get("interval_count"),
                           "product": product.get("id") if isinstance(product, dict) else product}
    return cache[price_id]


def costs_money(before, quantity_before, after, quantity_after):
    """Whether moving from ``before`` x ``quantity_before`` to ``after`` x ``quantity_after`` (two
    ``terms``) charges the customer now: a dearer total per period, or another billing interval
    (Stripe starts a new period at once, charged in full). A price without a unit amount counts as
    dearer: what it costs is known only to Stripe's invoice, so it is charged before it is granted.
    """
    if (before["interval"], before["interval_count"]) != (after["interval"], after["interval_count"]):
        return True
    if before["unit_amount"] is None or after["unit_amount"] is None:
        return True
    return after["unit_amount"] * quantity_after > before["unit_amount"] * quantity_before


def proration_for(provider, current_price, current_quantity, price, quantity):
    """Return the ``proration_behavior`` of a change of the one item from ``current_price`` x
    ``current_quantity`` to ``price`` x ``quantity``: ``always_invoice`` when it costs money, else
    ``PROVIDER_PRORATION``.

    Raises ``UnknownPrice`` (422) for a price in another currency than the subscription's (Stripe
    bills a subscription in one currency and refuses the change).
    """
    before, after = terms(provider, current_price), terms(provider, price)
    if before["currency"] != after["currency"]:
        raise UnknownPrice(f"Price {price!r} is in {after['currency']}, the subscription in {before['currency']}: "
                           "a subscription is billed in one currency.", details={"price": price})
    if costs_money(before, current_quantity, after, quantity):
        return INVOICE_AT_ONCE
    return current_app.config["PROVIDER_PRORATION"]


def cancel_now_terms(status, metered):
    """Return ``(prorate, invoice_now)`` for cancelling now a subscription in Stripe ``status`` whose items
    include a metered price when ``metered``: ``POST /subscription/cancel`` now and a deleted account alike.

    ``invoice_now``: Stripe bills the usage of a period cut short only on a final invoice asked for with it
    ("a final invoice that invoices for any un-invoiced metered usage", https://docs.stripe.com/api/subscriptions/cancel;
    "you charge the customer for the usage accrued during the shortened billing period",
    https://docs.stripe.com/billing/subscriptions/usage-based/manage-billing-setup): without it, cancelling
    now would be a way not to pay for usage. A paid period only (``active``): a trial's usage is never
    billed, and in dunning nothing more is collected. ``prorate`` credits the unused time of a period
    in good standing (``active``, ``trialing``) unless ``PROVIDER_PRORATION`` is ``none``: in dunning the
    period was never paid for, so its unused time is no credit to give back.
    """
    prorate = current_app.config["PROVIDER_PRORATION"] != "none" and status in VALID_STATUSES
    return prorate, status == "active" and metered
