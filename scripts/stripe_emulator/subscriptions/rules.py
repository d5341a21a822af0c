"""Stripe's rules for a subscription's create and update parameters that the types cannot say.

Checked before anything changes, in the subscription's own time (its customer's test clock):

- ``items``: at most 20 (https://docs.stripe.com/api/subscriptions/create#create_subscription-items,
  "A list of up to 20 subscription items"; "a Subscription can have between 1 and 20 plans",
  https://github.com/stripe/stripe-dotnet/issues/1194), and no price twice: one item per price, a
  quantity says how many (https://docs.stripe.com/billing/subscriptions/quantities), refused as
  "Cannot add multiple subscription items with the same plan: ..." (price now;
  https://github.com/stripe-archive/submigrate/issues/1).
- ``trial_end`` and a numeric ``cancel_at``: in the future, "Invalid timestamp: must be an integer
  Unix timestamp in the future." (https://docs.stripe.com/api/subscriptions/create#create_subscription-trial_end,
  the answer as https://github.com/stripe/stripe-go/issues/93 shows it).
- ``payment_behavior=pending_if_incomplete`` is for updates only: "You can use pending updates with the
  update subscription, create subscription item, and update subscription item calls"
  (https://docs.stripe.com/billing/subscriptions/pending-updates).
- ``billing_mode[type]``: ``classic`` or ``flexible``; since 2025-09-30.clover a subscription created without
  one is ``flexible`` (https://docs.stripe.com/changelog/clover/2025-09-30/billing-mode-default-flexible).
  Their credit prorations differ (``flexible.py``). Checkout's ``subscription_data.billing_mode`` likewise.
- a trial: at most two years ("Can be at most two years from ``billing_cycle_anchor``", the SDK's
  ``trial_end``), so ``trial_period_days`` at most 730; Checkout's at least 1 ("Has to be at least 1").
- ``classic`` items share one interval: "Currency and interval fields must match across all plans on
  this subscription" (mixed intervals need flexible, https://docs.stripe.com/billing/subscriptions/mixed-interval).
  The emulator keeps one period per subscription, so it refuses mixed intervals in ``flexible`` mode too.
"""

from __future__ import annotations

from ..core.store import Store, StripeError

ITEMS_MAX = 20
MAX_TRIAL_DAYS = 730
_PAST = "Invalid timestamp: must be an integer Unix timestamp in the future."


def check_create(store: Store, params: dict) -> None:
    """Raises Stripe's 400 for the first rule above a subscription create breaks."""
    if params.get("payment_behavior") == "pending_if_incomplete":
        raise StripeError(400, "payment_behavior=pending_if_incomplete can only be used when updating "
                          "a subscription.", param="payment_behavior")
    billing_mode(params.get("billing_mode"), "billing_mode[type]")
    check_trial_days(params.get("trial_period_days"), "trial_period_days", least=0)
    _check_prices(store, [entry.get("price") for entry in params.get("items") or []])
    _check_times(store, params)


def billing_mode(mode: dict | None, param: str) -> str:
    """The billing mode asked for: ``flexible`` by default; 400 for a type Stripe does not know (see above)."""
    chosen = (mode or {}).get("type") or "flexible"
    if chosen not in ("classic", "flexible"):
        raise StripeError(400, f"Invalid {param}: must be one of classic, flexible", param=param)
    return chosen


def check_trial_days(days: int | None, param: str, least: int) -> None:
    """Refuse a trial of fewer than ``least`` or more than ``MAX_TRIAL_DAYS`` days (see above)."""
    if days is not None and not least <= int(days) <= MAX_TRIAL_DAYS:
        raise StripeError(400, f"{param} must be between {least} and {MAX_TRIAL_DAYS} days.", param=param)


def check_one_interval(prices: list[dict]) -> None:
    """Refuse ``classic`` items whose prices recur at different intervals (see above)."""
    intervals = {(p["recurring"]["interval"], p["recurring"].get("interval_count") or 1) for p in prices}
    if len(intervals) > 1:
        raise StripeError(400, "Currency and interval fields must match across all plans on this subscription. "
                          "Found mismatch in interval field.", param="items")


def check_update(store: Store, sub: dict, params: dict) -> None:
    """Raises Stripe's 400 for the first rule above an update of ``sub`` breaks.

    The prices counted are the subscription's after the update: ``items[n][id]`` names a kept item
    (``price`` replaces its price, ``deleted`` drops it), an entry without ``id`` adds one.
    """
    entries = params.get("items") or []
    by_id = {entry["id"]: entry for entry in entries if entry.get("id")}
    prices = []
    for item in sub["items"]["data"]:
        entry = by_id.get(item["id"], {})
        if entry.get("deleted") not in (True, "true"):
            prices.append(entry.get("price") or item["price"]["id"])
    prices += [entry.get("price") for entry in entries if not entry.get("id")]
    _check_prices(store, prices)
    _check_times(store, params)


def _check_prices(store: Store, prices: list) -> None:
    if len(prices) > ITEMS_MAX:
        raise StripeError(400, f"A subscription can have at most {ITEMS_MAX} items.", param="items")
    seen = set()
    for price in prices:
        if price is not None and price in seen:
            raise StripeError(400, f"Cannot add multiple subscription items with the same price: {price}.",
                              param="items")
        seen.add(price)
    # A price that does not exist, or is not recurring, is refused naming its item where the items are read.
    check_one_interval([store.prices[price] for price in prices if price in store.prices
                        and store.prices[price]["recurring"]])


def _check_times(store: Store, params: dict) -> None:
    for name in ("trial_end", "cancel_at"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value <= store.now():
            raise StripeError(400, _PAST, param=name)
