"""Discounts on prorations as Stripe computes them (issue 32 item 3), through the real SDK.

Proration lines are never discounted by the invoice's discount ("discountable: always false for
prorations"): each carries the discount in force for its side inside its amount. An interval change
starts a new period and charges what the preview showed; a negative invoice total goes to the
customer's balance and the next invoice uses it.
"""

from __future__ import annotations

import pytest

DAY = 86400


def _price(stripe_client, amount, interval="month"):
    return stripe_client.v1.prices.create(params={"unit_amount": amount, "currency": "usd",
                                                  "recurring": {"interval": interval}, "product_data": {"name": "P"}})


@pytest.fixture
def paying(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "pr@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


def _coupon(stripe_client, percent=20, duration="forever"):
    return stripe_client.v1.coupons.create(params={"percent_off": percent, "duration": duration}).id


def _midway(sub):
    item = sub["items"].data[0]
    start, end = item.current_period_start, item.current_period_end
    return start + (end - start) // 2, (end - (start + (end - start) // 2)) / (end - start)


def _swap(stripe_client, sub, price, when, **extra):
    return {"items": [{"id": sub["items"].data[0].id, "price": price.id}], "proration_behavior": "always_invoice",
            "proration_date": when, **extra}


def _lines(invoice):
    return sorted(line.amount for line in invoice.lines.data)


def test_an_upgrade_with_a_new_code_credits_the_old_time_whole_and_discounts_only_the_new(stripe_client, paying):
    ten, twenty = _price(stripe_client, 1000), _price(stripe_client, 2000)
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                        "customer": paying.id, "items": [{"price": ten.id}]})
    when, share = _midway(sub)
    coupon = _coupon(stripe_client)
    change = _swap(stripe_client, sub, twenty, when)
    preview = stripe_client.v1.invoices.create_preview(params={
        "subscription": sub.id, "discounts": [{"coupon": coupon}],
        "subscription_details": {k: v for k, v in change.items()}})
    updated = stripe_client.v1.subscriptions.update(sub.id, params={
        **change, "discounts": [{"coupon": coupon}], "expand": ["latest_invoice"]})
    invoice = updated.latest_invoice
    assert _lines(invoice) == sorted([-round(1000 * share), round(1600 * share)])
    assert all(line.discountable is False for line in invoice.lines.data)
    named = [line.discounts for line in sorted(invoice.lines.data, key=lambda line: line.amount)]
    assert named[0] == [] and len(named[1]) == 1, "the new time names the new discount (amount 0: included)"
    assert invoice.total_discount_amounts == [] and invoice.total == invoice.subtotal
    assert (preview.total, _lines(preview)) == (invoice.total, _lines(invoice)), "charged what the preview showed"


def test_a_downgrades_credit_is_the_same_whatever_the_invoices_sign_and_the_balance_is_used(stripe_client, emulator,
                                                                                            paying):
    ten, twenty = _price(stripe_client, 1000), _price(stripe_client, 2000)
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": paying.id, "items": [{"price": twenty.id}], "discounts": [{"coupon": _coupon(stripe_client)}]})
    assert sub.latest_invoice and stripe_client.v1.invoices.retrieve(sub.latest_invoice).amount_paid == 1600
    when, share = _midway(sub)
    invoice = stripe_client.v1.subscriptions.update(sub.id, params={
        **_swap(stripe_client, sub, ten, when), "expand": ["latest_invoice"]}).latest_invoice
    credit, charge = -round(1600 * share), round(800 * share)
    assert _lines(invoice) == sorted([credit, charge]), "the credit is what was paid for the time, discounted"
    assert (invoice.total, invoice.amount_due, invoice.ending_balance) == (credit + charge, 0, credit + charge)
    assert stripe_client.v1.customers.retrieve(paying.id).balance == credit + charge, "not lost: the balance"

    emulator.advance(32 * DAY)
    renewal = stripe_client.v1.invoices.retrieve(stripe_client.v1.subscriptions.retrieve(sub.id).latest_invoice)
    assert renewal.starting_balance == credit + charge
    assert renewal.total == 800 and renewal.amount_due == max(0, 800 + credit + charge)
    assert stripe_client.v1.customers.retrieve(paying.id).balance == min(0, 800 + credit + charge)


def test_an_interval_change_starts_a_new_period_and_charges_what_the_preview_showed(stripe_client, emulator, paying):
    monthly, yearly = _price(stripe_client, 1000), _price(stripe_client, 10000, "year")
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"}, "customer": paying.id,
                                                        "items": [{"price": monthly.id}]})
    now = emulator.clock()
    change = {"items": [{"id": sub["items"].data[0].id, "price": yearly.id}], "proration_behavior": "always_invoice",
              "proration_date": now}
    preview = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id, "subscription_details": change})
    updated = stripe_client.v1.subscriptions.update(sub.id, params={**change, "expand": ["latest_invoice"]})
    invoice = updated.latest_invoice
    assert invoice.total == preview.total and invoice.amount_paid == preview.amount_due
    assert 10000 in _lines(invoice), "a whole year at the new price"
    item = updated["items"].data[0]
    assert item.current_period_start == now and item.current_period_end - now >= 365 * DAY


def test_a_coupon_for_other_products_takes_nothing_off(stripe_client, paying):
    """``applies_to.products``: "An array of Product IDs that this Coupon will apply to" -- on the first invoice
    and in a proration, the lines of another product stay whole."""
    ten, twenty = _price(stripe_client, 1000), _price(stripe_client, 2000)
    elsewhere = stripe_client.v1.coupons.create(params={
        "percent_off": 50, "duration": "forever", "applies_to": {"products": [twenty.product]}}).id
    sub = stripe_client.v1.subscriptions.create(params={
        "billing_mode": {"type": "classic"}, "customer": paying.id, "items": [{"price": ten.id}],
        "discounts": [{"coupon": elsewhere}], "expand": ["latest_invoice"]})
    assert sub.latest_invoice.total == 1000 and sub.latest_invoice.total_discount_amounts == []
    when, share = _midway(sub)
    updated = stripe_client.v1.subscriptions.update(sub.id, params={
        **_swap(stripe_client, sub, twenty, when), "expand": ["latest_invoice"]})
    assert _lines(updated.latest_invoice) == sorted([-round(1000 * share), round(1000 * share)]), \
        "the old time credited whole, the new at the coupon's half"
