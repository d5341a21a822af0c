"""A plan change picked in the billing portal that waits for the period's end (``schedule_at_period_end``).

A portal configuration's ``features.subscription_update.schedule_at_period_end.conditions`` says when: "When any
condition is true, the update will be scheduled at the end of the current period"
(https://docs.stripe.com/api/customer_portal/configurations/create#create_portal_configuration-features-subscription_update-schedule_at_period_end,
added by https://docs.stripe.com/changelog/acacia/2024-10-28/customer-portal-schedule-downgrades). The two conditions:
``decreasing_item_amount`` (the item costs less a period: unit amount times quantity) and ``shortening_interval``
(the new price recurs over a shorter interval). Otherwise the change applies at once, as before.

The portal then puts the subscription on a subscription schedule, through the same rules as the API
(``models.py``): made from the subscription (``subscription_schedule.created`` and ``customer.subscription.updated``
naming it), then given two phases (``subscription_schedule.updated``): the current one as it is until the period's
end, then the new price, with the subscription's discounts, tax setting and default payment method carried
(a phase's discounts replace the subscription's when it starts), ``end_behavior=release``. The schedule is the
portal's: its ``metadata`` is empty, so an integration that marks its own schedules sees it is not one of them.

Not modelled: changing, from the portal, a change already scheduled: a subscription on a schedule gets Stripe's
answer to a second schedule ("already attached to a schedule"), shown on the page.
"""

from __future__ import annotations

from ..billing import periods
from ..core.store import Store
from . import models


def _period_amount(price: dict, quantity: int | None) -> int:
    return (price["unit_amount"] or 0) * (quantity or 1)


def _interval_seconds(price: dict, start: int) -> int:
    recurring = price["recurring"]
    return periods.add_interval(start, recurring["interval"], recurring["interval_count"]) - start


def at_period_end(store: Store, update_feature: dict, sub: dict, price_id: str) -> bool:
    """Whether the portal's change of ``sub``'s first item to ``price_id`` waits for the period's end under the
    configuration's ``subscription_update`` feature (any of its conditions true)."""
    conditions = {c["type"] for c in (update_feature.get("schedule_at_period_end") or {}).get("conditions") or ()}
    item = sub["items"]["data"][0]
    now_on, then = item["price"], store.prices[price_id]
    start = periods.period_start(sub)
    return (("decreasing_item_amount" in conditions
             and _period_amount(then, item.get("quantity")) < _period_amount(now_on, item.get("quantity")))
            or ("shortening_interval" in conditions
                and _interval_seconds(then, start) < _interval_seconds(now_on, start)))


def _entry(price_id: str, item: dict) -> dict:
    return {"price": price_id} if item.get("quantity") is None else {"price": price_id, "quantity": item["quantity"]}


def schedule_change(store: Store, sub: dict, price_id: str) -> dict:
    """Schedule ``sub``'s first item to move to ``price_id`` when its period ends; return the schedule.

    Raises ``StripeError`` (400) as the API does: the subscription ended, or already on a schedule.
    """
    sched = models.from_subscription(store, sub)
    current = sched["current_phase"]
    items = sub["items"]["data"]
    carried = {"discounts": [{"discount": discount} for discount in sub["discounts"]],
               "automatic_tax": {"enabled": sub["automatic_tax"]["enabled"]},
               "default_payment_method": sub["default_payment_method"]}
    phases = [{"start_date": current["start_date"], "end_date": current["end_date"],
               "items": [_entry(item["price"]["id"], item) for item in items], **carried},
              {"items": [_entry(price_id, items[0]), *(_entry(item["price"]["id"], item) for item in items[1:])],
               **carried}]
    return models.update(store, sched, sub, {"phases": phases, "end_behavior": "release"})
