"""A plan's metered prices as subscription items (CONTRACT "Usage-based billing": "Metered prices").

A metered price belongs to a plan through ``PROVIDER_PLANS`` like any price; which configured prices
are metered is Stripe's to say (``recurring.usage_type``, read with the plan catalogue). Subscribing
to a plan's licensed price adds the plan's metered prices as items (with no quantity: the meter
counts); a swap to another plan's price deletes the old plan's metered items and adds the new plan's
in the same update (``app.subscription.management``: ``error_if_incomplete``, as a pending update
takes no deleted item). In Stripe's ``classic`` billing mode the usage of a deleted metered item
since the last invoice is not billed, and an added one bills what comes after it
(https://docs.stripe.com/billing/subscriptions/usage-based/manage-billing-setup, "Update prices
mid-cycle"): usage is per plan, as the plan's prices say.
"""
from flask import current_app

from app.billing import catalog
from app.errors import UnknownPrice


def _siblings(price):
    plans = current_app.config["PROVIDER_PLANS"]
    return [other for other, plan in plans.items() if plan == plans.get(price) and other != price]


def metered_for(price):
    """The metered price ids of ``price``'s plan, sorted; ``[]`` without any (and then no Stripe read).

    Raises ``UnknownPrice`` (422) for a metered price itself: it is never subscribed to alone.
    """
    if not _siblings(price):
        return []
    metered = catalog.metered_prices()
    if price in metered:
        raise UnknownPrice.for_price(price)
    return sorted(other for other in _siblings(price) if other in metered)


def metered_items(items):
    """The metered ones of a subscription's local ``SubscriptionItem`` rows ``items``: those without a
    quantity (Stripe gives a licensed item one, always)."""
    return [item for item in items if item.quantity is None]


def swap_items(items, price):
    """The ``items`` entries that move a subscription's metered items to ``price``'s plan.

    ``items`` are the subscription's local ``SubscriptionItem`` rows. ``[]`` when neither plan has any.
    """
    wanted = metered_for(price)
    held = metered_items(items)
    if sorted(item.provider_price for item in held) == wanted:
        return []
    return [{"id": item.provider_id, "deleted": True} for item in held] + [{"price": other} for other in wanted]

