"""The emulator's clock: moving it runs whatever falls due, oldest first."""

from __future__ import annotations

from ..core.store import Store
from ..subscriptions import renewals


def advance(store: Store, seconds: float) -> list[str]:
    """Move the clock forward and run everything that falls due, oldest first.

    Each step runs at the emulator's clock, which is already the target time: events carry
    ``created`` = the end of the advance, as Stripe's test clocks do.
    """
    store.clock_offset += seconds
    now, processed = store.now(), []
    for _ in range(10_000):  # guard: each pass moves one subscription one step forward
        due = [(d, order, s["id"], action) for order, s in enumerate(store.subscriptions.values())
               for d, action in renewals.due(store, s) if d <= now]
        if not due:
            break
        _, _, sub_id, action = min(due, key=lambda entry: entry[:2])
        action(store, store.subscriptions[sub_id])
        processed.append(sub_id)
    return processed
