"""Billing meters in the emulator (issue 34 item 6): meters, meter events with Stripe's rules, event
summaries, metered prices, and the renewal invoice that bills a period's usage, on a test clock too."""

from __future__ import annotations

import pytest
import stripe

DAY = 86400


def _meter(stripe_client, event_name="tokens", formula="sum", **extra):
    return stripe_client.v1.billing.meters.create(params={
        "display_name": event_name.title(), "event_name": event_name,
        "default_aggregation": {"formula": formula}, **extra})


def _report(stripe_client, customer, value, event_name="tokens", **extra):
    return stripe_client.v1.billing.meter_events.create(params={
        "event_name": event_name, "payload": {"stripe_customer_id": customer, "value": str(value)}, **extra})


def _summed(stripe_client, meter, customer, start, end, **extra):
    return [s.aggregated_value for s in stripe_client.v1.billing.meters.event_summaries.list(
        meter.id, params={"customer": customer, "start_time": start, "end_time": end, **extra}).data]


def _minute(ts):
    return ts - ts % 60


def test_meter_lifecycle(stripe_client):
    meter = _meter(stripe_client)
    assert (meter.object, meter.status, meter.customer_mapping.event_payload_key,
            meter.value_settings.event_payload_key) == ("billing.meter", "active", "stripe_customer_id", "value")
    with pytest.raises(stripe.InvalidRequestError, match="already exists"):
        _meter(stripe_client)
    assert stripe_client.v1.billing.meters.deactivate(meter.id).status == "inactive"
    assert [m.id for m in stripe_client.v1.billing.meters.list(params={"status": "inactive"}).data] == [meter.id]
    assert stripe_client.v1.billing.meters.list(params={"status": "active"}).data == []
    assert stripe_client.v1.billing.meters.reactivate(meter.id).status_transitions.deactivated_at is None
    assert stripe_client.v1.billing.meters.retrieve(meter.id).status == "active"
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.billing.meters.create(params={"display_name": "x", "event_name": "x",
                                                       "default_aggregation": {"formula": "max"}})
    assert refused.value.param == "default_aggregation[formula]", "validated against the SDK's types"


def test_events_follow_stripes_rules(stripe_client, emulator, customer):
    meter = _meter(stripe_client)
    now = emulator.clock()
    event = _report(stripe_client, customer.id, 5, identifier="req-1")
    assert (event.object, event.identifier, event.payload["value"]) == ("billing.meter_event", "req-1", "5")
    with pytest.raises(stripe.InvalidRequestError, match="An event already exists with identifier req-1"):
        _report(stripe_client, customer.id, 5, identifier="req-1")
    for timestamp in (now - 36 * DAY, now + 6 * 60):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            _report(stripe_client, customer.id, 1, timestamp=timestamp)
        assert refused.value.param == "timestamp"
    _report(stripe_client, customer.id, 7, timestamp=now - 34 * DAY)
    _report(stripe_client, customer.id, 3, event_name="unknown")  # accepted, counted by no meter
    stripe_client.v1.billing.meter_events.create(params={"event_name": "tokens", "payload": {"value": "9"}})
    _report(stripe_client, customer.id, "1.5")  # accepted, not counted: whole numbers only
    assert [r["code"] for r in emulator.store.meter_error_reports] == [
        "no_meter", "meter_event_no_customer_defined", "meter_event_invalid_value"]
    start = _minute(now - 35 * DAY)
    assert _summed(stripe_client, meter, customer.id, start, _minute(now) + 120) == [12]
    emulator.advance(DAY + 1)
    assert _report(stripe_client, customer.id, 1, identifier="req-1").identifier == "req-1", \
        "an identifier is unique for 24 hours"


@pytest.mark.parametrize(("formula", "expected"), [("sum", 6), ("count", 3), ("last", 2)])
def test_aggregation(stripe_client, emulator, customer, formula, expected):
    meter = _meter(stripe_client, formula=formula, customer_mapping={"event_payload_key": "account",
                                                                    "type": "by_id"},
                   value_settings={"event_payload_key": "tokens"})
    now = emulator.clock()
    for offset, value in ((-120, 1), (-30, 2), (-60, 3)):
        stripe_client.v1.billing.meter_events.create(params={
            "event_name": "tokens", "timestamp": now + offset,
            "payload": {"account": customer.id, "tokens": str(value)}})
    assert _summed(stripe_client, meter, customer.id, _minute(now) - 600, _minute(now) + 60) == [expected]


def test_summaries_need_minute_bounds_and_group_by_hour(stripe_client, emulator, customer):
    meter = _meter(stripe_client)
    now = emulator.clock()
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _summed(stripe_client, meter, customer.id, _minute(now) + 1, _minute(now) + 60)
    assert refused.value.param == "start_time"
    hour = now - now % 3600
    _report(stripe_client, customer.id, 4, timestamp=hour - 10)
    _report(stripe_client, customer.id, 6, timestamp=max(hour, now - 60))
    assert _summed(stripe_client, meter, customer.id, hour - 3600, hour + 3600,
                   value_grouping_window="hour") == [6, 4], "newest window first"


def test_metered_prices_need_a_meter_and_take_no_quantity(stripe_client, customer, price):
    meter = _meter(stripe_client)
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.prices.create(params={"currency": "usd", "unit_amount": 2, "product": price.product,
                                               "recurring": {"interval": "month", "usage_type": "metered"}})
    assert refused.value.param == "recurring[meter]"
    metered = stripe_client.v1.prices.create(params={
        "currency": "usd", "unit_amount": 2, "product": price.product,
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    assert (metered.recurring.usage_type, metered.recurring.meter) == ("metered", meter.id)
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                      "customer": customer.id, "items": [
            {"price": metered.id, "quantity": 3}]})
    assert refused.value.param == "items[0][quantity]"


def test_renewal_on_a_test_clock_bills_the_periods_usage(stripe_client, emulator, price):
    clock, cus, sub, _ = _metered_on_clock(stripe_client, emulator, price)
    first = stripe_client.v1.invoices.retrieve(sub.latest_invoice)
    assert first.amount_due == price.unit_amount, "the first invoice charges the licensed price only"
    assert "quantity" not in sub["items"].data[1]
    for value in (10, 20, 12):
        _report(stripe_client, cus.id, value)  # the clock's time by default
    with pytest.raises(stripe.InvalidRequestError, match="5 minutes"):
        _report(stripe_client, cus.id, 1, timestamp=emulator.clock())  # an hour ahead of the clock
    preview = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id})
    assert 42 * 3 in [line.amount for line in preview.lines.data], "the preview shows the usage so far"

    stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": clock.frozen_time + 32 * DAY})
    renewed = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    usage = [line for line in renewed.latest_invoice.lines.data if line.amount == 42 * 3]
    assert usage and usage[0].quantity == 42 and usage[0].period.end == sub["items"].data[0].current_period_end
    assert renewed.latest_invoice.amount_due == price.unit_amount + 42 * 3


def test_a_pending_update_takes_no_item_deletion(stripe_client, customer, price):
    """Stripe's pending updates take an item's price and quantity only
    (https://docs.stripe.com/billing/subscriptions/pending-updates-reference)."""
    meter = _meter(stripe_client)
    metered = stripe_client.v1.prices.create(params={
        "currency": "usd", "unit_amount": 2, "product": price.product,
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    stripe_client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "default_payment_method": "pm_card_visa",
        "items": [{"price": price.id}, {"price": metered.id}]})
    item = sub["items"].data[1].id
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.subscriptions.update(sub.id, params={
            "payment_behavior": "pending_if_incomplete", "items": [{"id": item, "deleted": True}]})
    assert refused.value.param == "items[0][deleted]"
    updated = stripe_client.v1.subscriptions.update(sub.id, params={
        "proration_behavior": "none", "items": [{"id": item, "deleted": True}]})
    assert [i.price.id for i in updated["items"].data] == [price.id]


def test_a_pending_update_adds_no_item(stripe_client, customer, price):
    """An item added in a pending update is not modelled (Stripe's list has an item's price and quantity):
    refused, never dropped when the charge then fails."""
    meter = _meter(stripe_client)
    metered = stripe_client.v1.prices.create(params={
        "currency": "usd", "unit_amount": 2, "product": price.product,
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    stripe_client.v1.payment_methods.attach("pm_card_visa", params={"customer": customer.id})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "default_payment_method": "pm_card_visa", "items": [{"price": price.id}]})
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.subscriptions.update(sub.id, params={
            "payment_behavior": "pending_if_incomplete", "items": [{"price": metered.id}]})
    assert (refused.value.code, refused.value.param) == ("parameter_unsupported", "items[0][price]")
    assert [i.price.id for i in stripe_client.v1.subscriptions.retrieve(sub.id)["items"].data] == [price.id]


def _metered_on_clock(stripe_client, emulator, price, **subscription):
    """A customer on a new test clock with a card, subscribed to ``price`` and a metered price of 3 per token."""
    meter = _meter(stripe_client)
    metered = stripe_client.v1.prices.create(params={
        "currency": "usd", "unit_amount": 3, "product": price.product,
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock() - 3600})
    cus = stripe_client.v1.customers.create(params={
        "email": "m@example.com", "payment_method": "pm_card_visa", "test_clock": clock.id,
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"}, "customer": cus.id,
                                                        "items": [{"price": price.id}, {"price": metered.id}],
                                                        **subscription})
    return clock, cus, sub, metered


def _advance(stripe_client, clock, to):
    stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": to})


def test_a_trials_usage_is_never_billed(stripe_client, emulator, price):
    """"During the trial period, any usage accrued doesn't count toward the total charged ... After the trial
    period ends, usage accrues and is billed at the end of the next billing cycle"
    (https://docs.stripe.com/billing/subscriptions/usage-based/pricing-models, "Free trials")."""
    clock, cus, sub, metered = _metered_on_clock(stripe_client, emulator, price, trial_period_days=14)
    _report(stripe_client, cus.id, 500)
    preview = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id})
    assert [line.amount for line in preview.lines.data] == [price.unit_amount], "the trial's end bills no usage"
    _advance(stripe_client, clock, sub.trial_end + 60)
    ended = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]})
    assert ended.status == "active" and ended.latest_invoice.amount_paid == price.unit_amount
    assert [line.pricing.price_details.price for line in ended.latest_invoice.lines.data] == [price.id]
    _report(stripe_client, cus.id, 7)
    _advance(stripe_client, clock, ended["items"].data[0].current_period_end + 60)
    renewed = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]}).latest_invoice
    usage = [line for line in renewed.lines.data if line.pricing.price_details.price == metered.id]
    assert [(line.quantity, line.amount) for line in usage] == [(7, 21)], "only what came after the trial"
    assert renewed.amount_due == price.unit_amount + 21


@pytest.mark.parametrize("invoice_now", [True, False])
def test_cancel_now_bills_the_usage_only_with_invoice_now(stripe_client, emulator, price, invoice_now):
    """``invoice_now`` "will generate a final invoice that invoices for any un-invoiced metered usage"
    (https://docs.stripe.com/api/subscriptions/cancel); without it the period's usage is never billed."""
    clock, cus, sub, metered = _metered_on_clock(stripe_client, emulator, price)
    _report(stripe_client, cus.id, 40)
    _advance(stripe_client, clock, clock.frozen_time + 2 * DAY)
    params = {"invoice_now": True} if invoice_now else {}
    assert stripe_client.v1.subscriptions.cancel(sub.id, params=params).status == "canceled"
    invoices = stripe_client.v1.invoices.list(params={"subscription": sub.id}).data
    if not invoice_now:
        assert [invoice.id for invoice in invoices] == [sub.latest_invoice], "nothing more is invoiced"
        return
    final = invoices[0]
    assert [(line.pricing.price_details.price, line.quantity, line.amount) for line in final.lines.data] == [
        (metered.id, 40, 120)]
    assert (final.status, final.amount_paid) == ("paid", 120)
