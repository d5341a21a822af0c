"""Subscription schedules through the real SDK (https://docs.stripe.com/api/subscription_schedules): made from a
subscription, phases replaced by ``duration``, the next phase started when the emulator's clock passes the
current one's end (the renewal then bills its price and discount), released, cancelled, and their events."""

from __future__ import annotations

import pytest
import stripe

DAY = 86400


@pytest.fixture
def paying(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "phases@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


@pytest.fixture
def cheap(stripe_client, price):
    return stripe_client.v1.prices.create(params={"unit_amount": 900, "currency": "usd", "product": price.product,
                                                  "recurring": {"interval": "month"}})


def _subscribe(stripe_client, paying, price, **extra):
    return stripe_client.v1.subscriptions.create(params={
        "customer": paying.id, "items": [{"price": price.id, "quantity": 2}], **extra})


def _schedule(stripe_client, sub):
    return stripe_client.v1.subscription_schedules.create(params={"from_subscription": sub.id})


def _two_phases(sub, new_price, **next_phase):
    item = sub["items"].data[0]
    return [{"start_date": item.current_period_start, "items": [{"price": item.price.id, "quantity": 2}],
             "duration": {"interval": "month"}},
            {"items": [{"price": new_price.id, "quantity": 2}], "duration": {"interval": "month"}, **next_phase}]


def _invoices(stripe_client, sub):
    return stripe_client.v1.invoices.list(params={"subscription": sub.id}).data


def test_a_schedule_from_a_subscription_is_its_current_period_and_the_only_one(stripe_client, emulator, paying,
                                                                                 price):
    sub = _subscribe(stripe_client, paying, price)
    sched = _schedule(stripe_client, sub)
    item = sub["items"].data[0]
    assert (sched.status, sched.subscription, sched.end_behavior) == ("active", sub.id, "release")
    (phase,) = sched.phases
    assert (phase.start_date, phase.end_date) == (item.current_period_start, item.current_period_end)
    assert [(i.price, i.quantity) for i in phase["items"]] == [(price.id, 2)]
    assert stripe_client.v1.subscriptions.retrieve(sub.id).schedule == sched.id
    with pytest.raises(stripe.InvalidRequestError, match="already attached to a schedule"):
        _schedule(stripe_client, sub)
    listed = stripe_client.v1.subscription_schedules.list(params={"customer": paying.id}).data
    assert [s.id for s in listed] == [sched.id]


def test_phases_are_contiguous_by_duration_and_iterations_is_refused(stripe_client, emulator, paying, price, cheap):
    sub = _subscribe(stripe_client, paying, price)
    sched = _schedule(stripe_client, sub)
    phases = _two_phases(sub, cheap)
    for broken, message in (
            ({**phases[1], "iterations": 1}, "unknown parameter: phases\\[1\\]\\[iterations\\]"),
            ({**phases[1], "start_date": phases[0]["start_date"] + DAY}, "contiguous"),
            ({**phases[1], "end_date": phases[0]["start_date"] + 90 * DAY}, "only specify one")):
        with pytest.raises(stripe.InvalidRequestError, match=message):
            stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": [phases[0], broken]})
    with pytest.raises(stripe.InvalidRequestError, match="start date of the current phase"):
        stripe_client.v1.subscription_schedules.update(sched.id, params={
            "phases": [{**phases[0], "start_date": phases[0]["start_date"] - DAY}, phases[1]]})
    updated = stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": phases})
    assert updated.phases[0].end_date == updated.phases[1].start_date == sub["items"].data[0].current_period_end


def test_the_next_phase_starts_at_the_renewal_which_bills_its_price_and_discount(stripe_client, emulator, paying,
                                                                                   price, cheap):
    sub = _subscribe(stripe_client, paying, price)
    coupon = stripe_client.v1.coupons.create(params={"percent_off": 50, "duration": "forever"})
    sub = stripe_client.v1.subscriptions.update(sub.id, params={"discounts": [{"coupon": coupon.id}],
                                                                "proration_behavior": "none"})
    sched = _schedule(stripe_client, sub)
    discount = sched.phases[0].discounts[0].discount
    stripe_client.v1.subscription_schedules.update(sched.id, params={
        "phases": _two_phases(sub, cheap, discounts=[{"discount": discount}])})
    before = len(_invoices(stripe_client, sub))
    emulator.advance(10 * DAY)
    assert len(_invoices(stripe_client, sub)) == before  # nothing charged before the period's end
    emulator.advance(25 * DAY)
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert [(i.price.id, i.quantity) for i in live["items"].data] == [(cheap.id, 2)]
    assert live.discounts == [discount]
    renewal = _invoices(stripe_client, sub)[0]
    assert (renewal.billing_reason, renewal.amount_due, renewal.status) == ("subscription_cycle", 900, "paid")
    sched = stripe_client.v1.subscription_schedules.retrieve(sched.id)
    assert (sched.status, sched.current_phase.start_date) == ("active", sched.phases[1].start_date)


def test_a_phase_without_the_discount_drops_it(stripe_client, emulator, paying, price, cheap):
    """A phase's discounts replace the subscription's: a schedule that forgets one bills full price."""
    sub = _subscribe(stripe_client, paying, price)
    coupon = stripe_client.v1.coupons.create(params={"percent_off": 50, "duration": "forever"})
    sub = stripe_client.v1.subscriptions.update(sub.id, params={"discounts": [{"coupon": coupon.id}],
                                                                "proration_behavior": "none"})
    sched = _schedule(stripe_client, sub)
    stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": _two_phases(sub, cheap)})
    emulator.advance(35 * DAY)
    assert stripe_client.v1.subscriptions.retrieve(sub.id).discounts == []
    assert _invoices(stripe_client, sub)[0].amount_due == 1800


def test_the_last_phase_ends_by_its_end_behavior(stripe_client, emulator, webhook, paying, price, cheap):
    released = _subscribe(stripe_client, paying, price)
    sched = _schedule(stripe_client, released)
    stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": _two_phases(released, cheap)})
    emulator.advance(35 * DAY)
    emulator.advance(31 * DAY)
    done = stripe_client.v1.subscription_schedules.retrieve(sched.id)
    assert (done.status, done.released_subscription, done.subscription) == ("released", released.id, None)
    live = stripe_client.v1.subscriptions.retrieve(released.id)
    assert (live.status, live.schedule, live["items"].data[0].price.id) == ("active", None, cheap.id)
    cancelled = _subscribe(stripe_client, paying, price)
    other = _schedule(stripe_client, cancelled)
    stripe_client.v1.subscription_schedules.update(other.id, params={
        "phases": _two_phases(cancelled, cheap), "end_behavior": "cancel"})
    emulator.advance(35 * DAY)
    emulator.advance(31 * DAY)
    assert stripe_client.v1.subscription_schedules.retrieve(other.id).status == "completed"
    assert stripe_client.v1.subscriptions.retrieve(cancelled.id).status == "canceled"
    emulator.flush()
    types = [e["type"] for e in webhook.wait_for(1) if e["type"].startswith("subscription_schedule.")]
    assert {"subscription_schedule.created", "subscription_schedule.updated", "subscription_schedule.released",
            "subscription_schedule.completed"} <= set(types)


def test_a_release_leaves_the_subscription_as_it_is(stripe_client, emulator, paying, price, cheap):
    sub = _subscribe(stripe_client, paying, price)
    sched = _schedule(stripe_client, sub)
    stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": _two_phases(sub, cheap)})
    with pytest.raises(stripe.InvalidRequestError, match="managed by the subscription schedule"):
        stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True})
    released = stripe_client.v1.subscription_schedules.release(sched.id)
    assert (released.status, released.released_subscription) == ("released", sub.id)
    with pytest.raises(stripe.InvalidRequestError, match="`released` status"):
        stripe_client.v1.subscription_schedules.release(sched.id)
    emulator.advance(35 * DAY)
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert (live.schedule, live["items"].data[0].price.id) == (None, price.id)
    assert _invoices(stripe_client, sub)[0].amount_due == 3000
    assert stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at_period_end": True}).cancel_at_period_end


def test_cancelling_a_schedule_or_its_subscription_ends_both(stripe_client, emulator, webhook, paying, price):
    sub = _subscribe(stripe_client, paying, price)
    sched = stripe_client.v1.subscription_schedules.cancel(_schedule(stripe_client, sub).id)
    assert sched.status == "canceled"
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "canceled"
    other = _subscribe(stripe_client, paying, price)
    sched = _schedule(stripe_client, other)
    stripe_client.v1.subscriptions.cancel(other.id)
    assert stripe_client.v1.subscription_schedules.retrieve(sched.id).status == "canceled"
    emulator.flush()
    types = [e["type"] for e in webhook.wait_for(1)]
    assert types.count("subscription_schedule.canceled") == 2


def test_a_phase_keeps_a_quantity_of_zero_and_defaults_an_absent_one_to_one(stripe_client, paying, price, cheap):
    """A phase item's ``quantity`` (https://docs.stripe.com/api/subscription_schedules/create): 0 stays 0 (a team
    down to no seats at the renewal); absent, 1."""
    sub = _subscribe(stripe_client, paying, price)
    phases = _two_phases(sub, cheap)
    phases[1]["items"] = [{"price": cheap.id, "quantity": 0}]
    sched = stripe_client.v1.subscription_schedules.update(_schedule(stripe_client, sub).id, params={"phases": phases})
    assert [item.quantity for item in sched.phases[1]["items"]] == [0]
    phases[1]["items"] = [{"price": cheap.id}]
    sched = stripe_client.v1.subscription_schedules.update(sched.id, params={"phases": phases})
    assert [item.quantity for item in sched.phases[1]["items"]] == [1]
