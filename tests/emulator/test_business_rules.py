"""Stripe's rules that types cannot say (issue 32 item 1), refused through the real SDK as Stripe refuses them.

Each rule cites its Stripe document in ``validation/rules.py`` (every operation) or
``subscriptions/rules.py`` (subscription create and update).
"""

from __future__ import annotations

import pytest
import stripe

DAY = 86400


@pytest.fixture
def card_customer(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "rules@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


def _refused(call) -> stripe.InvalidRequestError:
    with pytest.raises(stripe.InvalidRequestError) as refused:
        call()
    assert refused.value.http_status == 400
    return refused.value


def _sub(stripe_client, customer, price, **extra):
    return stripe_client.v1.subscriptions.create(params={
        "billing_mode": {"type": "classic"}, "customer": customer.id, "items": [{"price": price.id}], **extra})


def test_metadata_is_bounded_as_stripe_bounds_it(stripe_client):
    """https://docs.stripe.com/api/metadata: 50 keys, keys of 40 characters, values of 500."""
    create = stripe_client.v1.customers.create
    assert _refused(lambda: create(params={"metadata": {f"k{i}": "v" for i in range(51)}})).param == "metadata"
    assert _refused(lambda: create(params={"metadata": {"k" * 41: "v"}})).param == "metadata"
    assert _refused(lambda: create(params={"metadata": {"k": "v" * 501}})).param == "metadata"
    kept = create(params={"metadata": {**{f"k{i}": "v" for i in range(49)}, "k" * 40: "v" * 500}})
    assert len(kept.metadata.to_dict()) == 50


def test_metadata_rules_hold_at_any_depth(stripe_client, price):
    error = _refused(lambda: stripe_client.v1.checkout.sessions.create(params={
        "mode": "subscription", "line_items": [{"price": price.id, "quantity": 1}],
        "success_url": "http://x/ok", "subscription_data": {"metadata": {"k": "v" * 501}}}))
    assert error.param == "subscription_data[metadata]"


def test_expand_is_at_most_four_levels(stripe_client, card_customer, price):
    """https://docs.stripe.com/api/expanding_objects: "a maximum depth of four levels"."""
    sub = _sub(stripe_client, card_customer, price)
    error = _refused(lambda: stripe_client.v1.subscriptions.retrieve(sub.id, params={
        "expand": ["latest_invoice.payments.data.payment.payment_intent"]}))
    assert (error.param, error.user_message) == ("expand", "You cannot expand more than 4 levels of a property.")
    four = stripe_client.v1.subscriptions.retrieve(sub.id, params={
        "expand": ["latest_invoice.customer.invoice_settings.default_payment_method"]})
    method = four.latest_invoice.customer.invoice_settings.default_payment_method
    assert (four.latest_invoice.customer.id, method.object) == (card_customer.id, "payment_method"), "four levels"


@pytest.mark.parametrize("email", ["not-an-email", "two@@example.com", "space @example.com", "ada@"])
def test_an_invalid_email_is_refused_on_create_and_update(stripe_client, email):
    """Stripe's ``email_invalid`` (https://docs.stripe.com/error-codes#email-invalid)."""
    error = _refused(lambda: stripe_client.v1.customers.create(params={"email": email}))
    assert (error.code, error.param) == ("email_invalid", "email")
    customer = stripe_client.v1.customers.create(params={"email": "ada@example.com"})
    error = _refused(lambda: stripe_client.v1.customers.update(customer.id, params={"email": email}))
    assert (error.code, error.param) == ("email_invalid", "email")
    assert stripe_client.v1.customers.retrieve(customer.id).email == "ada@example.com"


def test_an_over_long_email_is_refused(stripe_client):
    """Stripe's OpenAPI bounds a customer's ``email`` at 512 characters."""
    error = _refused(lambda: stripe_client.v1.customers.create(params={"email": "a" * 510 + "@example.com"}))
    assert error.param == "email"
    assert stripe_client.v1.customers.create(params={"email": "a" * 500 + "@example.com"}).email.startswith("a")


def test_negative_quantities_and_trial_days_are_refused(stripe_client, card_customer, price):
    for params in ({"items": [{"price": price.id, "quantity": -1}]}, {"trial_period_days": -3}):
        error = _refused(lambda p=params: stripe_client.v1.subscriptions.create(params={
            "billing_mode": {"type": "classic"}, "customer": card_customer.id, "items": [{"price": price.id}], **p}))
        assert error.code == "parameter_invalid_integer"
        assert error.param in ("items[0][quantity]", "trial_period_days")
    assert stripe_client.v1.subscriptions.list(params={"customer": card_customer.id}).data == []


def test_trial_end_and_cancel_at_in_the_past_are_refused(stripe_client, emulator, card_customer, price):
    past = emulator.clock() - 60
    error = _refused(lambda: _sub(stripe_client, card_customer, price, trial_end=past))
    assert (error.param, error.user_message) == (
        "trial_end", "Invalid timestamp: must be an integer Unix timestamp in the future.")
    assert _refused(lambda: _sub(stripe_client, card_customer, price, cancel_at=past)).param == "cancel_at"
    sub = _sub(stripe_client, card_customer, price)
    assert _refused(lambda: stripe_client.v1.subscriptions.update(sub.id, params={"cancel_at": past})).param == \
        "cancel_at"
    assert stripe_client.v1.subscriptions.retrieve(sub.id).cancel_at is None


def test_a_future_trial_end_on_create_is_the_trial(stripe_client, emulator, card_customer, price):
    end = emulator.clock() + 10 * DAY
    sub = _sub(stripe_client, card_customer, price, trial_end=end)
    assert (sub.status, sub.trial_end, sub["items"].data[0].current_period_end) == ("trialing", end, end)
    now = _sub(stripe_client, card_customer, price, trial_end="now", trial_period_days=7)
    assert (now.status, now.trial_end) == ("active", None), "trial_end=now overrides the plan's days"


def test_at_most_twenty_items_and_no_price_twice(stripe_client, card_customer, price, price2):
    twice = _refused(lambda: stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": card_customer.id, "items": [{"price": price.id}, {"price": price.id}]}))
    assert twice.param == "items"
    prices = [stripe_client.v1.prices.create(params={
        "unit_amount": 100 + i, "currency": "usd", "recurring": {"interval": "month"},
        "product_data": {"name": f"p{i}"}}) for i in range(21)]
    many = _refused(lambda: stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": card_customer.id, "items": [{"price": p.id} for p in prices]}))
    assert many.param == "items" and "20" in many.user_message
    sub = _sub(stripe_client, card_customer, price)
    again = _refused(lambda: stripe_client.v1.subscriptions.update(sub.id, params={"items": [{"price": price.id}]}))
    assert again.param == "items"
    swapped = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": sub["items"].data[0].id, "price": price2.id}, {"price": price.id}],
        "proration_behavior": "none"})
    assert sorted(i.price.id for i in swapped["items"].data) == sorted([price.id, price2.id])


def test_pending_if_incomplete_is_for_updates_only(stripe_client, card_customer, price):
    error = _refused(lambda: _sub(stripe_client, card_customer, price, payment_behavior="pending_if_incomplete"))
    assert error.param == "payment_behavior"


def test_classic_items_share_one_interval(stripe_client, card_customer, price):
    """Mixed intervals need flexible mode (https://docs.stripe.com/billing/subscriptions/mixed-interval)."""
    yearly = stripe_client.v1.prices.create(params={
        "unit_amount": 10000, "currency": "usd", "recurring": {"interval": "year"}, "product_data": {"name": "y"}})
    both = [{"price": price.id}, {"price": yearly.id}]
    mixed = _refused(lambda: _sub(stripe_client, card_customer, price, items=both))
    assert mixed.param == "items" and "interval" in mixed.user_message
    sub = _sub(stripe_client, card_customer, price)
    added = _refused(lambda: stripe_client.v1.subscriptions.update(sub.id, params={"items": [{"price": yearly.id}]}))
    assert added.param == "items"
    swapped = stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": sub["items"].data[0].id, "price": yearly.id}], "proration_behavior": "none"})
    assert swapped["items"].data[0].price.id == yearly.id, "all items on the new interval is one interval"


def test_a_checkout_session_is_checked_when_made_not_when_paid(stripe_client, card_customer, price):
    """A page that can never be paid is refused at creation: its prices as a subscription takes them (active,
    recurring, one currency), at most one discount, a code the customer may redeem, a trial of 1-730 days."""
    def session(line_items=None, data=None, **extra):
        return lambda: stripe_client.v1.checkout.sessions.create(params={
            "mode": "subscription", "customer": card_customer.id, "success_url": "http://x/ok",
            "line_items": line_items or [{"price": price.id, "quantity": 1}],
            "subscription_data": {"billing_mode": {"type": "classic"}, **(data or {})}, **extra})

    def made(**fields):
        return stripe_client.v1.prices.create(params={"unit_amount": 500, "product_data": {"name": "x"}, **fields})

    archived = made(currency="usd", recurring={"interval": "month"})
    stripe_client.v1.prices.update(archived.id, params={"active": False})
    euro = made(currency="eur", recurring={"interval": "month"})
    for items, said in (([{"price": archived.id, "quantity": 1}], "inactive"),
                        ([{"price": price.id, "quantity": 1}, {"price": euro.id, "quantity": 1}], "currency")):
        error = _refused(session(items))
        assert error.param.startswith("line_items[") and said in error.user_message
    coupon = stripe_client.v1.coupons.create(params={"percent_off": 10, "duration": "once"})
    two = _refused(session(discounts=[{"coupon": coupon.id}, {"coupon": coupon.id}]))
    assert two.param == "discounts"
    gone = stripe_client.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": coupon.id},
                                                           "code": "GONE", "active": False})
    assert _refused(session(discounts=[{"promotion_code": gone.id}])).param == "discounts[0][promotion_code]"
    for days in (0, 731):
        assert _refused(session(data={"trial_period_days": days})).param == "subscription_data[trial_period_days]"
    assert stripe_client.v1.checkout.sessions.create(params={
        "mode": "subscription", "customer": card_customer.id, "success_url": "http://x/ok",
        "line_items": [{"price": price.id, "quantity": 1}], "discounts": [{"coupon": coupon.id}],
        "subscription_data": {"billing_mode": {"type": "classic"}, "trial_period_days": 730}}).status == "open"


def test_an_incomplete_subscription_takes_only_metadata(stripe_client, card_customer, price, price2):
    """"A subscription in this status can only have metadata and default_source updated" (``Subscription.status``)."""
    sub = _sub(stripe_client, card_customer, price, payment_behavior="default_incomplete")
    assert sub.status == "incomplete"
    for change in ({"cancel_at_period_end": True}, {"items": [{"id": sub["items"].data[0].id, "price": price2.id}],
                                                    "proration_behavior": "always_invoice"}):
        assert _refused(lambda c=change: stripe_client.v1.subscriptions.update(sub.id, params=c)).param == \
            sorted(change)[0]
    tagged = stripe_client.v1.subscriptions.update(sub.id, params={"metadata": {"k": "v"}})
    assert tagged.metadata.to_dict() == {"k": "v"}
