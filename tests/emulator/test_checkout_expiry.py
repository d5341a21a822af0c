"""Checkout Sessions expire as Stripe expires them (issue 43, "Stripe fidelity left"): at ``expires_at``, when
the clock they live in passes it, or at once by ``POST /v1/checkout/sessions/{id}/expire``; either way the
session reads ``expired`` and one ``checkout.session.expired`` event is sent
(https://docs.stripe.com/api/checkout/sessions/expire,
https://docs.stripe.com/api/events/types#event_types-checkout.session.expired)."""

from __future__ import annotations

from tests.support.emulator import DAY


def _session(stripe_client, customer, price):
    return stripe_client.v1.checkout.sessions.create(params={
        "mode": "subscription", "customer": customer.id, "success_url": "http://127.0.0.1:9/ok",
        "line_items": [{"price": price.id, "quantity": 1}]})


def _expired_events(stripe_client):
    """``(session id, status, created)`` of each ``checkout.session.expired`` event, oldest first."""
    events = stripe_client.v1.events.list(params={"type": "checkout.session.expired"}).data
    return [(e.data.object["id"], e.data.object["status"], e.created) for e in reversed(events)]


def test_expiring_a_session_sends_checkout_session_expired_once(stripe_client, emulator, webhook, customer, price):
    session = _session(stripe_client, customer, price)
    assert stripe_client.v1.checkout.sessions.expire(session.id).status == "expired"
    assert stripe_client.v1.checkout.sessions.retrieve(session.id).status == "expired"
    emulator.flush()
    sent = [(e["type"], e["data"]["object"]["object"], e["data"]["object"]["id"], e["data"]["object"]["status"])
            for e in webhook.events("checkout.session.")]
    assert sent == [("checkout.session.expired", "checkout.session", session.id, "expired")]


def test_a_session_expires_when_the_clock_passes_its_expires_at(stripe_client, emulator, customer, price):
    session = _session(stripe_client, customer, price)
    paid = _session(stripe_client, customer, price)
    emulator.control("POST", f"checkout_sessions/{paid.id}/complete", {"payment_method": "pm_card_visa"})
    emulator.advance(session.expires_at - emulator.clock() - 60)
    assert _expired_events(stripe_client) == [], "a minute before expires_at it is still open"
    assert stripe_client.v1.checkout.sessions.retrieve(session.id).status == "open"

    emulator.advance(120)
    [(expired_id, status, created)] = _expired_events(stripe_client)  # sent by the advance, not by a later read
    assert (expired_id, status) == (session.id, "expired")
    assert session.expires_at <= created <= emulator.clock()
    assert stripe_client.v1.checkout.sessions.retrieve(session.id).status == "expired"
    assert stripe_client.v1.checkout.sessions.retrieve(paid.id).status == "complete", "a paid one never expires"
    stripe_client.v1.checkout.sessions.list(params={"customer": customer.id})
    assert len(_expired_events(stripe_client)) == 1, "read again, it is not announced again"


def test_a_test_clocks_session_expires_with_that_clock_only(stripe_client, emulator, customer, price):
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": emulator.clock()})
    on_clock = stripe_client.v1.customers.create(params={"email": "clock@example.com", "test_clock": clock.id})
    frozen = _session(stripe_client, on_clock, price)
    real = _session(stripe_client, customer, price)
    assert frozen.expires_at == clock.frozen_time + DAY

    emulator.advance(DAY + 60)
    assert [event[:2] for event in _expired_events(stripe_client)] == [(real.id, "expired")]
    assert stripe_client.v1.checkout.sessions.retrieve(frozen.id).status == "open", "its clock has not moved"

    target = clock.frozen_time + DAY + 1
    stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": target})
    assert _expired_events(stripe_client)[1:] == [(frozen.id, "expired", target)], "dated in the clock's time"
    assert stripe_client.v1.checkout.sessions.retrieve(frozen.id).status == "expired"
