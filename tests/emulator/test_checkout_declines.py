"""Checkout with a declining card, with or without a trial (issue 32 item 4): as Stripe's card check does,
the session stays open, no card is attached, no subscription exists and nothing is charged; on the hosted
page the customer sees the decline and can try another card."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

import pytest
import stripe

from scripts.stripe_emulator.testing import EmulatorControlError


def _session(stripe_client, customer, price, trial_days=None):
    params = {"mode": "subscription", "customer": customer.id, "success_url": "http://127.0.0.1:9/ok",
              "line_items": [{"price": price.id, "quantity": 1}],
              "subscription_data": {"billing_mode": {"type": "classic"}}}
    if trial_days:
        params["subscription_data"]["trial_period_days"] = trial_days
    return stripe_client.v1.checkout.sessions.create(params=params)


def _nothing_happened(stripe_client, emulator, customer, session):
    assert stripe_client.v1.checkout.sessions.retrieve(session.id).status == "open"
    assert stripe_client.v1.subscriptions.list(params={"customer": customer.id, "status": "all"}).data == []
    assert stripe_client.v1.invoices.list(params={"customer": customer.id}).data == []
    assert stripe_client.v1.payment_methods.list(params={"customer": customer.id}).data == []


@pytest.mark.parametrize("trial_days", [None, 14])
def test_a_declined_card_leaves_the_session_open_with_or_without_a_trial(stripe_client, emulator, customer, price,
                                                                         trial_days):
    session = _session(stripe_client, customer, price, trial_days)
    with pytest.raises(EmulatorControlError) as declined:
        emulator.control("POST", f"checkout_sessions/{session.id}/complete",
                         {"payment_method": "pm_card_chargeDeclined"})
    assert "402" in str(declined.value) and "card_declined" in str(declined.value)
    _nothing_happened(stripe_client, emulator, customer, session)
    done = emulator.control("POST", f"checkout_sessions/{session.id}/complete", {"payment_method": "pm_card_visa"})
    assert done["status"] == "complete"
    assert done["payment_status"] == ("no_payment_required" if trial_days else "paid"), "a trial's payment waits"
    sub = stripe_client.v1.subscriptions.retrieve(done["subscription"])
    assert sub.status == ("trialing" if trial_days else "active")


def test_the_hosted_page_shows_the_decline_and_keeps_the_session(stripe_client, emulator, customer, price):
    session = _session(stripe_client, customer, price, trial_days=7)
    form = urllib.parse.urlencode({"payment_method": "pm_card_chargeDeclined"}).encode()

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as answered:
        opener.open(urllib.request.Request(session.url, data=form, method="POST"), timeout=30)
    assert answered.value.code == 303 and "declined" in urllib.parse.unquote(answered.value.headers["Location"])
    _nothing_happened(stripe_client, emulator, customer, session)


def test_an_expired_session_cannot_be_paid_and_only_an_open_one_expires(stripe_client, emulator, customer, price):
    session = _session(stripe_client, customer, price)
    assert stripe_client.v1.checkout.sessions.expire(session.id).status == "expired"
    with pytest.raises(EmulatorControlError) as refused:
        emulator.control("POST", f"checkout_sessions/{session.id}/complete", {"payment_method": "pm_card_visa"})
    assert "expired" in str(refused.value)
    assert stripe_client.v1.subscriptions.list(params={"customer": customer.id, "status": "all"}).data == []
    with pytest.raises(stripe.InvalidRequestError) as again:
        stripe_client.v1.checkout.sessions.expire(session.id)
    assert again.value.http_status == 400
    paid = _session(stripe_client, customer, price)
    emulator.control("POST", f"checkout_sessions/{paid.id}/complete", {"payment_method": "pm_card_visa"})
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.checkout.sessions.expire(paid.id)
    assert stripe_client.v1.checkout.sessions.retrieve(paid.id).status == "complete"
