"""``statuses.tie_order``: two states of one subscription from the same second, ordered by status alone."""
import pytest

from app.billing.statuses import tie_order


@pytest.mark.parametrize("stored, incoming, order", [
    ("incomplete", "active", 1), ("incomplete", "incomplete_expired", 1),
    ("active", "canceled", 1), ("paused", "canceled", 1), ("past_due", "canceled", 1),
    ("active", "incomplete", -1), ("canceled", "active", -1), ("incomplete_expired", "incomplete", -1),
    # Within a stage, statuses move both ways (dunning and back, a trial paused and resumed).
    ("active", "past_due", 0), ("past_due", "active", 0), ("active", "active", 0), ("incomplete", "incomplete", 0),
    ("canceled", "incomplete_expired", 0),
    # A status Stripe adds later, or none: its stage is unknown, so only a live read can order it.
    ("some_new_status", "incomplete", 0), ("incomplete", "some_new_status", 0), (None, "active", 0),
    ("canceled", None, 0),
])
def test_a_later_stage_is_newer_and_a_stage_cannot_order_itself(stored, incoming, order):
    assert tie_order(stored, incoming) == order
