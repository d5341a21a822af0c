"""Time: the emulator's own clock, and Stripe's test clocks (https://docs.stripe.com/billing/testing/test-clocks).

A customer created with ``test_clock`` lives in that clock's frozen time: its subscriptions, invoices and
events are dated by it, and only advancing that clock moves them. Everything else lives in the
emulator's clock (real time plus ``/_emulator/clock/advance``), which never moves a test clock's
objects. Advancing runs whatever falls due, oldest first, each step at the target time: events carry
``created`` = the end of the advance, as Stripe's test clocks do. The caller holds the store lock.
"""

from __future__ import annotations

from collections.abc import Callable

from ..billing import periods
from ..checkout import models as checkout
from ..core.store import Store, StripeError, new_id
from ..subscriptions import renewals
from ..subscriptions.models import cancel_now

# Stripe deletes a test clock 30 days after it was created.
CLOCK_LIFETIME_SECONDS = 30 * 86400


def _run_due(store: Store, moves: Callable[[dict], bool]) -> list[str]:
    """Run what falls due by now for the subscriptions ``moves`` selects, oldest first."""
    now, processed = store.now(), []
    for _ in range(10_000):  # guard: each pass moves one subscription one step forward
        due = [(d, order, s["id"], action) for order, s in enumerate(store.subscriptions.values()) if moves(s)
               for d, action in renewals.due(store, s) if d <= now]
        if not due:
            break
        _, _, sub_id, action = min(due, key=lambda entry: entry[:2])
        action(store, store.subscriptions[sub_id])
        processed.append(sub_id)
    return processed


def advance(store: Store, seconds: float) -> list[str]:
    """Move the emulator's clock forward: every subscription not on a test clock that falls due, then every
    Checkout Session not on one that expires."""
    store.clock_offset += seconds
    processed = _run_due(store, lambda sub: store.clock_of(sub["customer"]) is None)
    checkout.expire_due(store, None)
    return processed


def create(store: Store, params: dict) -> dict:
    """``POST /v1/test_helpers/test_clocks``: a clock frozen at ``frozen_time``."""
    clock_id = new_id("clock_")
    clock = {"id": clock_id, "object": "test_helpers.test_clock", "created": store.now(),
             "deletes_after": store.now() + CLOCK_LIFETIME_SECONDS, "frozen_time": params["frozen_time"],
             "livemode": False, "name": params.get("name"), "status": "ready", "status_details": {}}
    store.test_clocks[clock_id] = clock
    with store.on_clock(clock_id):
        store.emit("test_helpers.test_clock.created", clock)
    return clock


def advance_limit(store: Store, clock: dict) -> int:
    """The latest ``frozen_time`` the clock may advance to, as Stripe bounds it
    (https://docs.stripe.com/api/test_clocks/advance#advance_test_clock-frozen_time): "Cannot be more than
    two intervals in the future from the shortest subscription in this test clock. If there are no
    subscriptions in this test clock, it cannot be more than two years in the future."
    """
    now = clock["frozen_time"]
    limits = [periods.add_interval(now, "year", 2)]
    live = [sub for sub in store.subscriptions.values() if store.clock_of(sub["customer"]) == clock["id"]
            and sub["status"] not in ("canceled", "incomplete_expired")]
    if live:
        limits = [periods.add_interval(now, item["price"]["recurring"]["interval"],
                                       2 * item["price"]["recurring"]["interval_count"])
                  for sub in live for item in sub["items"]["data"]]
    return min(limits)


def advance_clock(store: Store, clock: dict, frozen_time: int) -> dict:
    """``POST /v1/test_helpers/test_clocks/{id}/advance``: only this clock's customers' objects move.

    Stripe advances asynchronously: the call answers the clock ``advancing`` and a later retrieve shows it
    ``ready`` (https://docs.stripe.com/api/test_clocks/advance: "Advancement is done when status changes to
    Ready"). Here the work is done before the call answers; the answer still says ``advancing``, so a
    client that polls for ``ready`` as it must with Stripe works unchanged, and one that does not is caught.
    """
    if frozen_time <= clock["frozen_time"]:
        raise StripeError(400, "The test clock's frozen_time must be later than its current frozen_time "
                          f"({clock['frozen_time']}).", param="frozen_time")
    limit = advance_limit(store, clock)
    if frozen_time > limit:
        raise StripeError(400, "Cannot advance the test clock more than two intervals of its shortest "
                          f"subscription, or two years without one: frozen_time must be at most {limit}.",
                          param="frozen_time")
    with store.on_clock(clock["id"]):
        clock["status"] = "advancing"
        store.emit("test_helpers.test_clock.advancing", clock)
        answer = dict(clock, frozen_time=frozen_time)
        clock["frozen_time"] = frozen_time
        _run_due(store, lambda sub: store.clock_of(sub["customer"]) == clock["id"])
        checkout.expire_due(store, clock["id"])
        clock["status"] = "ready"
        store.emit("test_helpers.test_clock.ready", clock)
    return answer


def delete(store: Store, clock: dict) -> None:
    """``DELETE /v1/test_helpers/test_clocks/{id}``: the clock goes, and its customers with their subscriptions."""
    with store.on_clock(clock["id"]):
        for cus in store.customers.values():
            if cus["test_clock"] == clock["id"] and not cus.get("_deleted"):
                for sub in store.subscriptions.values():
                    if sub["customer"] == cus["id"] and sub["status"] not in ("canceled", "incomplete_expired"):
                        cancel_now(store, sub)
                cus["_deleted"] = True
                store.emit("customer.deleted", cus)
        del store.test_clocks[clock["id"]]
        store.emit("test_helpers.test_clock.deleted", clock)
