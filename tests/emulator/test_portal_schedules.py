"""The billing portal's ``schedule_at_period_end`` through the real SDK and the portal page's forms
(https://docs.stripe.com/api/customer_portal/configurations/create): a configuration's conditions, a cheaper or
shorter price scheduled for the period's end on a schedule of Stripe's own, a dearer one applied at once; and what
Stripe answers a configuration whose plan changes are enabled without ``default_allowed_updates`` or ``products``."""

from __future__ import annotations

import pytest
import stripe

from tests.support.emulator import activate, events_of, post_form

CONDITIONS = [{"type": "decreasing_item_amount"}, {"type": "shortening_interval"}]


def _configuration(stripe_client, product, prices, conditions=CONDITIONS):
    return stripe_client.v1.billing_portal.configurations.create(params={"features": {
        "subscription_update": {"enabled": True, "default_allowed_updates": ["price"],
                                "proration_behavior": "always_invoice",
                                "products": [{"product": product, "prices": prices}],
                                "schedule_at_period_end": {"conditions": conditions}}}})


def _portal(stripe_client, customer, config):
    return stripe_client.v1.billing_portal.sessions.create(params={"customer": customer.id,
                                                                   "configuration": config.id}).url


@pytest.fixture
def cheap(stripe_client, price):
    return stripe_client.v1.prices.create(params={"unit_amount": 900, "currency": "usd", "product": price.product,
                                                  "recurring": {"interval": "month"}})


def test_the_configuration_keeps_the_conditions_and_refuses_an_unknown_one(stripe_client, price):
    config = _configuration(stripe_client, price.product, [price.id])
    kept = stripe_client.v1.billing_portal.configurations.retrieve(config.id).features.subscription_update
    assert [c.type for c in kept.schedule_at_period_end.conditions] == [c["type"] for c in CONDITIONS]
    bare = stripe_client.v1.billing_portal.configurations.create(params={"features": {
        "invoice_history": {"enabled": True}}})
    assert bare.features.subscription_update.schedule_at_period_end.conditions == [], "always answered, as a list"
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _configuration(stripe_client, price.product, [price.id], [{"type": "increasing_item_amount"}])
    assert "schedule_at_period_end" in refused.value.param


def test_a_cheaper_price_is_scheduled_for_the_period_end_on_a_schedule_of_the_portals(
        stripe_client, customer, price, cheap):
    sub = activate(stripe_client, customer, price)
    invoices = len(stripe_client.v1.invoices.list(params={"subscription": sub.id}).data)
    config = _configuration(stripe_client, price.product, [price.id, cheap.id])
    seen = len(events_of(stripe_client))
    post_form(f"{_portal(stripe_client, customer, config)}/subscriptions/{sub.id}/swap", {"price": cheap.id})

    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live["items"].data[0].price.id == price.id, "the paid-for price runs to the period's end"
    schedule = stripe_client.v1.subscription_schedules.retrieve(live.schedule)
    assert (schedule.status, schedule.end_behavior, schedule.metadata.to_dict()) == ("active", "release", {})
    assert [phase["items"][0].price for phase in schedule.phases] == [price.id, cheap.id]
    assert schedule.phases[1].start_date == live["items"].data[0].current_period_end
    assert len(stripe_client.v1.invoices.list(params={"subscription": sub.id}).data) == invoices, "nothing charged"
    assert {"subscription_schedule.created", "subscription_schedule.updated", "customer.subscription.updated"} <= {
        event.type for event in events_of(stripe_client)[seen:]}


def test_a_dearer_price_applies_at_once_and_without_conditions_a_cheaper_one_too(
        stripe_client, customer, price, price2, cheap):
    sub = activate(stripe_client, customer, price)
    config = _configuration(stripe_client, price.product, [price.id, price2.id, cheap.id])
    post_form(f"{_portal(stripe_client, customer, config)}/subscriptions/{sub.id}/swap", {"price": price2.id})
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert (live["items"].data[0].price.id, live.schedule) == (price2.id, None)

    unconditioned = _configuration(stripe_client, price.product, [price.id, price2.id, cheap.id], [])
    post_form(f"{_portal(stripe_client, customer, unconditioned)}/subscriptions/{sub.id}/swap", {"price": cheap.id})
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert (live["items"].data[0].price.id, live.schedule) == (cheap.id, None)


def test_a_shorter_interval_waits_for_the_period_end(stripe_client, customer, price):
    yearly = stripe_client.v1.prices.create(params={"unit_amount": 15000, "currency": "usd",
                                                    "product": price.product, "recurring": {"interval": "year"}})
    sub = activate(stripe_client, customer, yearly)
    config = _configuration(stripe_client, price.product, [price.id, yearly.id], [{"type": "shortening_interval"}])
    post_form(f"{_portal(stripe_client, customer, config)}/subscriptions/{sub.id}/swap", {"price": price.id})
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live["items"].data[0].price.id == yearly.id and live.schedule is not None


@pytest.mark.parametrize("missing", ["default_allowed_updates", "products"])
def test_plan_changes_enabled_without_their_terms_are_a_missing_parameter(stripe_client, price, missing):
    """Optional only with ``enabled=false`` since 2024-09-30.acacia
    (https://docs.stripe.com/changelog/acacia/2024-09-30/billing-portal-updates-optional)."""
    update = {"enabled": True, "default_allowed_updates": ["price"],
              "products": [{"product": price.product, "prices": [price.id]}]}
    del update[missing]
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.billing_portal.configurations.create(params={"features": {"subscription_update": update}})
    error = refused.value.error
    assert (refused.value.http_status, error.type, error.code, error.param) == (
        400, "invalid_request_error", "parameter_missing", f"features[subscription_update][{missing}]")
    disabled = stripe_client.v1.billing_portal.configurations.create(params={"features": {
        "subscription_update": {"enabled": False}}})
    assert disabled.features.subscription_update.enabled is False
