"""Billing modes, migrating to ``flexible``, and Stripe's minimum charge, through the real SDK.

``flexible`` "calculates credit prorations based on the original amount previously debited"
(https://docs.stripe.com/billing/subscriptions/billing-mode/compare); ``classic`` from the item's current price
and quantity. Stripe's migrate endpoint: https://docs.stripe.com/api/subscriptions/migrate. An invoice due less
than the minimum charge "is marked as paid and the amount owed moved to the invoice balance as a debit"
(https://docs.stripe.com/billing/customer/balance; 0.50 USD, https://docs.stripe.com/currencies#minimum-and-maximum-charge-amounts).
"""

from __future__ import annotations

import pytest
import stripe

DAY = 86400
SEAT = 1421  # a seat at 14.21 USD a month


@pytest.fixture
def paying(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "modes@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


@pytest.fixture
def seat(stripe_client):
    return stripe_client.v1.prices.create(params={"unit_amount": SEAT, "currency": "usd",
                                                  "recurring": {"interval": "month"}, "product_data": {"name": "Seat"}})


def _subscribe(stripe_client, paying, seat, quantity, mode=None, **extra):
    params = {"customer": paying.id, "items": [{"price": seat.id, "quantity": quantity}], **extra}
    if mode:
        params["billing_mode"] = {"type": mode}
    return stripe_client.v1.subscriptions.create(params=params)


def _free_once(stripe_client):
    return stripe_client.v1.coupons.create(params={"percent_off": 100, "duration": "once"}).id


def _set_seats(stripe_client, sub, quantity, **extra):
    return stripe_client.v1.subscriptions.update(sub.id, params={
        "items": [{"id": sub["items"].data[0].id, "quantity": quantity}], "proration_behavior": "always_invoice",
        "expand": ["latest_invoice"], **extra})


def _credits(invoice):
    return [line.amount for line in invoice.lines.data if line.amount < 0]


def test_a_subscription_is_flexible_unless_created_classic(stripe_client, emulator, paying, seat):
    """Since 2025-09-30.clover "Newly created subscriptions now default to flexible billing mode"
    (https://docs.stripe.com/changelog/clover/2025-09-30/billing-mode-default-flexible), Checkout's too."""
    flexible = _subscribe(stripe_client, paying, seat, 1)
    assert (flexible.billing_mode.type, flexible.billing_mode.updated_at) == ("flexible", flexible.created)
    assert flexible.billing_mode.flexible.proration_discounts == "included"
    classic = _subscribe(stripe_client, paying, seat, 1, mode="classic")
    assert (classic.billing_mode.type, classic.billing_mode.flexible) == ("classic", None)
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _subscribe(stripe_client, paying, seat, 1, mode="hybrid")
    assert refused.value.param == "billing_mode[type]"
    session = stripe_client.v1.checkout.sessions.create(params={
        "mode": "subscription", "customer": paying.id, "line_items": [{"price": seat.id, "quantity": 1}],
        "success_url": "http://x/ok"})
    done = emulator.control("POST", f"checkout_sessions/{session.id}/complete", {"payment_method": "pm_card_visa"})
    assert stripe_client.v1.subscriptions.retrieve(done["subscription"]).billing_mode.type == "flexible"


def test_seats_bought_free_and_reduced_are_credited_nothing_in_flexible_mode(stripe_client, emulator, paying, seat):
    """The finding: 30 seats under a 100%-off ``once`` code cost 0; 15 removed mid-period are credited 0 in
    flexible mode (what was debited), 15 × 14.21 × half in classic mode (the current price)."""
    subs = {mode: _subscribe(stripe_client, paying, seat, 30, mode=mode,
                             discounts=[{"coupon": _free_once(stripe_client)}]) for mode in ("flexible", "classic")}
    assert {stripe_client.v1.invoices.retrieve(sub.latest_invoice).amount_due for sub in subs.values()} == {0}
    emulator.advance(15 * DAY)
    credited = {mode: -sum(_credits(_set_seats(stripe_client, sub, 15).latest_invoice)) for mode, sub in subs.items()}
    assert credited == {"flexible": 0, "classic": round(30 * SEAT / 2)}


def test_a_credit_is_one_per_debit_never_above_it(stripe_client, emulator, paying, seat):
    """"Flexible billing mode calculates credit prorations based on the original amount previously debited": each
    credit names its debit in ``credited_items`` and gives back the unused share of what that debit took, less
    what earlier credits gave back from it."""
    sub = _subscribe(stripe_client, paying, seat, 2)
    first = stripe_client.v1.invoices.retrieve(sub.latest_invoice).lines.data[0]
    emulator.advance(10 * DAY)
    grown = _set_seats(stripe_client, sub, 4).latest_invoice
    assert _credit_lines(grown) == {first.id: -round(2 * SEAT * 2 / 3)}  # two thirds of the period left
    charge = [line for line in grown.lines.data if line.amount > 0][0]
    assert charge.amount == round(4 * SEAT * 2 / 3)
    emulator.advance(10 * DAY)
    # A third left: the first debit was given back to the period's end already; half of the charge is unused.
    assert _credit_lines(_set_seats(stripe_client, sub, 1).latest_invoice) == {charge.id: -round(charge.amount / 2)}
    emulator.advance(DAY)
    again = [line for line in _set_seats(stripe_client, sub, 3).latest_invoice.lines.data if line.amount > 0][0]
    # Only that charge is left to credit: the earlier debits were credited to the period's end already.
    later = _credit_lines(_set_seats(stripe_client, sub, 1).latest_invoice)
    assert list(later) == [again.id] and 0 < -later[again.id] <= again.amount


def _credit_lines(invoice):
    """``{debit line id: credit amount}`` of the invoice's credits, by the debit each names."""
    return {line.parent.subscription_item_details.proration_details.credited_items.invoice_line_items[0]: line.amount
            for line in invoice.lines.data if line.amount < 0}


def test_a_preview_shows_the_flexible_credit_the_change_makes(stripe_client, emulator, paying, seat):
    sub = _subscribe(stripe_client, paying, seat, 30, discounts=[{"coupon": _free_once(stripe_client)}])
    emulator.advance(15 * DAY)
    # The emulator's clock runs in real time, so the preview and the change name one proration_date, as Stripe
    # advises for a preview that must match (https://docs.stripe.com/billing/subscriptions/prorations).
    when = emulator.clock()
    preview = stripe_client.v1.invoices.create_preview(params={"subscription": sub.id, "subscription_details": {
        "items": [{"id": sub["items"].data[0].id, "quantity": 15}], "proration_behavior": "always_invoice",
        "proration_date": when}})
    # Half the period's 15 new seats, to the cent: the clock may run a second between the subscription and the
    # advance, so the fraction may be a second short of a half.
    assert _credits(preview) == [] and abs(preview.total - round(15 * SEAT / 2)) <= 1
    assert _set_seats(stripe_client, sub, 15, proration_date=when).latest_invoice.total == preview.total


def test_migrate_moves_classic_to_flexible_once(stripe_client, emulator, paying, seat):
    """``POST /v1/subscriptions/{id}/migrate`` (https://docs.stripe.com/api/subscriptions/migrate); "You can't migrate
    a subscription from flexible billing mode to classic billing mode"
    (https://docs.stripe.com/billing/subscriptions/billing-mode). Periods and anchor are kept."""
    sub = _subscribe(stripe_client, paying, seat, 30, mode="classic", discounts=[{"coupon": _free_once(stripe_client)}])
    emulator.advance(15 * DAY)
    before = emulator.clock()
    migrated = stripe_client.v1.subscriptions.migrate(sub.id, params={"billing_mode": {"type": "flexible"}})
    # The emulator's clock runs on in real time, so the migration's second lies between two readings.
    assert migrated.billing_mode.type == "flexible"
    assert before <= migrated.billing_mode.updated_at <= emulator.clock()
    assert (migrated.billing_cycle_anchor, migrated["items"].data[0].current_period_end) == \
        (sub.billing_cycle_anchor, sub["items"].data[0].current_period_end)
    event = stripe_client.v1.events.list(params={"type": "customer.subscription.updated"}).data[0]
    assert event.data.object["billing_mode"]["type"] == "flexible"
    assert _credits(_set_seats(stripe_client, sub, 15).latest_invoice) == []  # migrated: credits from debits
    for mode in ("flexible", "classic"):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            stripe_client.v1.subscriptions.migrate(sub.id, params={"billing_mode": {"type": mode}})
        assert refused.value.http_status == 400
    ended = _subscribe(stripe_client, paying, seat, 1, mode="classic")
    stripe_client.v1.subscriptions.cancel(ended.id)
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.subscriptions.migrate(ended.id, params={"billing_mode": {"type": "flexible"}})


def test_an_invoice_below_the_minimum_charge_goes_to_the_balance(stripe_client, emulator, paying, seat):
    """A 32-cent seat is not charged: the invoice is paid, the customer owes 32 cents on its balance, and the
    renewal collects them."""
    sub = _subscribe(stripe_client, paying, seat, 1)
    end = sub["items"].data[0].current_period_end
    left = round(32 / SEAT * (end - sub.created))  # the time a seat costs 32 cents for
    emulator.advance(end - left - emulator.clock())
    small = _set_seats(stripe_client, sub, 2).latest_invoice
    assert (small.amount_due, small.status, small.amount_paid, small.ending_balance) == (32, "paid", 0, 32)
    assert stripe_client.v1.customers.retrieve(paying.id).balance == 32
    emulator.advance(left + 60)
    renewal = stripe_client.v1.invoices.retrieve(stripe_client.v1.subscriptions.retrieve(sub.id).latest_invoice)
    assert (renewal.amount_due, renewal.amount_paid, renewal.status) == (2 * SEAT + 32, 2 * SEAT + 32, "paid")
    assert stripe_client.v1.customers.retrieve(paying.id).balance == 0
