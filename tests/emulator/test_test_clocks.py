"""Stripe's test clocks (issue 26 item 5): a customer created on a clock lives in its time; advancing it
moves only its customers' objects, and the emulator's own clock never moves them."""

from __future__ import annotations

import pytest
import stripe

DAY = 86400


def _subscribed(stripe_client, price, **customer):
    cus = stripe_client.v1.customers.create(params={
        "email": "c@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}, **customer})
    return stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                         "customer": cus.id, "items": [{"price": price.id}]})


def test_advancing_a_clock_renews_only_its_customers(stripe_client, emulator, price, webhook):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock(), "name": "t"})
    assert (clock.object, clock.status) == ("test_helpers.test_clock", "ready")
    other = _subscribed(stripe_client, price)
    mine = _subscribed(stripe_client, price, test_clock=clock.id)
    assert mine.test_clock == clock.id
    other_before = stripe_client.v1.subscriptions.retrieve(other.id).to_dict()

    target = clock.frozen_time + 32 * DAY
    advanced = stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": target})
    assert (advanced.frozen_time, advanced.status) == (target, "advancing"), "Stripe advances asynchronously"
    assert stripe_client.v1.test_helpers.test_clocks.retrieve(clock.id).status == "ready"
    renewed = stripe_client.v1.subscriptions.retrieve(mine.id, params={"expand": ["latest_invoice"]})
    assert renewed["items"].data[0].current_period_start == mine["items"].data[0].current_period_end
    assert renewed.latest_invoice.billing_reason == "subscription_cycle"
    assert renewed.latest_invoice.status == "paid" and renewed.latest_invoice.created == target
    assert stripe_client.v1.subscriptions.retrieve(other.id).to_dict() == other_before, "another user's is as it was"
    assert abs(emulator.clock() - clock.frozen_time) < 60, "the emulator's clock did not move"

    emulator.advance(40 * DAY)
    assert stripe_client.v1.subscriptions.retrieve(mine.id).to_dict() == renewed.to_dict() | {
        "latest_invoice": renewed.latest_invoice.id}, "the emulator's clock does not move a test clock's objects"
    emulator.flush()
    types = [event["type"] for event in webhook.events()]
    assert "test_helpers.test_clock.advancing" in types and "test_helpers.test_clock.ready" in types


def test_a_clock_is_listed_retrieved_and_deleted_with_its_customers(stripe_client, emulator, price):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    sub = _subscribed(stripe_client, price, test_clock=clock.id)
    assert stripe_client.v1.test_helpers.test_clocks.retrieve(clock.id).id == clock.id
    assert [c.id for c in stripe_client.v1.test_helpers.test_clocks.list().data] == [clock.id]
    assert stripe_client.v1.test_helpers.test_clocks.delete(clock.id).deleted is True
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "canceled"
    assert stripe_client.v1.customers.retrieve(sub.customer).deleted is True
    with pytest.raises(stripe.InvalidRequestError) as gone:
        stripe_client.v1.test_helpers.test_clocks.retrieve(clock.id)
    assert gone.value.code == "resource_missing"


def test_a_clock_does_not_go_back_and_a_customer_needs_a_real_clock(stripe_client, emulator):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": clock.frozen_time - 1})
    assert refused.value.param == "frozen_time"
    with pytest.raises(stripe.InvalidRequestError) as missing:
        stripe_client.v1.customers.create(params={"test_clock": "clock_nope"})
    assert (missing.value.code, missing.value.param) == ("resource_missing", "test_clock")


def test_an_existing_customer_can_be_put_on_a_clock_for_make_demo(stripe_client, emulator, price):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    sub = _subscribed(stripe_client, price)
    emulator.control("POST", f"customers/{sub.customer}/test_clock", {"test_clock": clock.id})
    assert stripe_client.v1.customers.retrieve(sub.customer).test_clock == clock.id
    assert stripe_client.v1.subscriptions.retrieve(sub.id).test_clock == clock.id
    emulator.advance(32 * DAY)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).to_dict()["items"] == sub.to_dict()["items"]


def test_a_clock_advances_at_most_two_intervals_of_its_shortest_subscription(stripe_client, emulator, price):
    """https://docs.stripe.com/api/test_clocks/advance: two intervals of the shortest subscription."""
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    _subscribed(stripe_client, price, test_clock=clock.id)  # monthly
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={
            "frozen_time": clock.frozen_time + 70 * DAY})
    assert refused.value.param == "frozen_time" and "two intervals" in refused.value.user_message
    assert stripe_client.v1.test_helpers.test_clocks.retrieve(clock.id).frozen_time == clock.frozen_time
    stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": clock.frozen_time + 55 * DAY})


def test_a_clock_without_subscriptions_advances_at_most_two_years(stripe_client, emulator):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={
            "frozen_time": clock.frozen_time + 732 * DAY})
    assert refused.value.param == "frozen_time"
    advanced = stripe_client.v1.test_helpers.test_clocks.advance(
        clock.id, params={"frozen_time": clock.frozen_time + 700 * DAY})
    assert advanced.status == "advancing"
