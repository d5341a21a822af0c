"""Where the emulator behaved unlike Stripe (issue 26 item 4): trial swaps, currencies, inactive prices,
card fingerprints. Through the real SDK."""

from __future__ import annotations

import pytest
import stripe


@pytest.fixture
def customer(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "jo@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


def _price(stripe_client, amount, currency="usd", **extra):
    return stripe_client.v1.prices.create(params={
        "unit_amount": amount, "currency": currency, "recurring": {"interval": "month"},
        "product_data": {"name": f"{amount} {currency}"}, **extra})


def _swap(stripe_client, sub, price, **extra):
    return stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": sub["items"].data[0].id, "price": price.id}], **extra})


@pytest.mark.parametrize("behavior", ["always_invoice", "create_prorations"])
def test_a_swap_during_a_trial_prorates_no_trial_time(stripe_client, customer, price, emulator, behavior):
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 14})
    emulator.advance(3 * 86400)
    dearer = _price(stripe_client, 4500)
    preview = stripe_client.v1.invoices.create_preview(params={
        "subscription": sub.id, "subscription_details": {
            "items": [{"id": sub["items"].data[0].id, "price": dearer.id}], "proration_behavior": behavior}})
    assert not [line for line in preview.lines.data if line.parent.subscription_item_details.proration]
    swapped = _swap(stripe_client, sub, dearer, proration_behavior=behavior)
    assert swapped.status == "trialing" and swapped.latest_invoice == sub.latest_invoice, "nothing invoiced now"
    assert swapped["items"].data[0].price.id == dearer.id
    upcoming = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id})
    assert [line.amount for line in upcoming.lines.data] == [4500], "the first period at the new price, no credit"


def test_a_swap_to_another_currency_or_an_inactive_price_is_refused(stripe_client, customer, price):
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                        "customer": customer.id, "items": [{"price": price.id}]})
    for other, said in ((_price(stripe_client, 1500, "eur"), "doesn't match the expected currency: `usd`"),
                        (_price(stripe_client, 2500, active=False), "The price specified is inactive")):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            _swap(stripe_client, sub, other, proration_behavior="always_invoice")
        assert refused.value.param == "items[0][price]" and said in refused.value.user_message
        assert refused.value.http_status == 400
    live = stripe_client.v1.subscriptions.retrieve(sub.id)
    assert live["items"].data[0].price.id == price.id and live.latest_invoice == sub.latest_invoice
    inactive = _price(stripe_client, 700, active=False)
    with pytest.raises(stripe.InvalidRequestError, match="inactive"):
        stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"}, "customer": customer.id,
                                                      "items": [{"price": inactive.id}]})


def test_an_inactive_price_stays_inactive(stripe_client):
    inactive = _price(stripe_client, 900, active=False, lookup_key="old")
    assert inactive.active is False
    assert stripe_client.v1.prices.retrieve(inactive.id).active is False
    assert stripe_client.v1.prices.list(params={"active": True, "lookup_keys": ["old"]}).data == []


def test_each_test_card_has_one_fingerprint_in_the_account(stripe_client, customer):
    def fingerprint(pm_id):
        return stripe_client.v1.payment_methods.retrieve(pm_id).card.fingerprint

    visa = {fingerprint(stripe_client.v1.setup_intents.create(params={
        "customer": customer.id, "payment_method": "pm_card_visa", "confirm": True}).payment_method) for _ in range(2)}
    visa.add(stripe_client.v1.payment_methods.create(params={
        "type": "card", "card": {"number": "4242424242424242", "exp_month": 12, "exp_year": 2040}}).card.fingerprint)
    visa.add(stripe_client.v1.payment_methods.create(params={"type": "card", "card": {"token": "tok_visa"}})
             .card.fingerprint)
    visa.add(fingerprint(customer.invoice_settings.default_payment_method))
    assert len(visa) == 1, "Stripe gives a card one fingerprint, however it was entered"
    others = {stripe_client.v1.payment_methods.create(params={"type": "card", "card": {"token": token}})
              .card.fingerprint for token in ("tok_mastercard", "tok_chargeDeclined", "tok_chargeCustomerFail")}
    assert len(others) == 3 and not others & visa
