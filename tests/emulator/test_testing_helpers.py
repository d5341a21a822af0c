"""The in-process runner used by the service's tests starts and stops cleanly."""

from __future__ import annotations

import threading
import time

from scripts.stripe_emulator.testing import EmulatorControlError, run_emulator


def test_run_emulator_lifecycle_leaves_no_threads():
    before = set(threading.enumerate())
    with run_emulator() as emu:
        assert emu.url.startswith("http://127.0.0.1:") and emu.port > 0
        assert abs(emu.clock() - time.time()) < 5
        assert emu.advance(60)["offset_seconds"] == 60
        try:
            emu.fail_next_renewal("sub_missing")
        except EmulatorControlError as err:
            assert "404" in str(err)
        else:
            raise AssertionError("expected EmulatorControlError")
        assert emu.state()["events_count"] == 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leftover:
            break
        time.sleep(0.02)
    assert leftover == []


def test_expand_payment_intent_tolerated(stripe_client, customer, price):
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}],
        "payment_behavior": "default_incomplete",
        "expand": ["latest_invoice.payment_intent", "latest_invoice.payments"]})
    inv = sub.latest_invoice
    assert inv.payment_intent.client_secret.startswith(inv.payment_intent.id + "_secret_")
    assert inv.payments.data[0].payment.payment_intent == inv.payment_intent.id
    plain = stripe_client.v1.invoices.retrieve(inv.id)
    assert "confirmation_secret" not in plain  # includable only via expand, as on Stripe


def test_api_requests_are_counted_by_resource_and_reset(stripe_client, emulator):
    emulator.reset()
    customer = stripe_client.v1.customers.create(params={"email": "counted@example.com"})
    stripe_client.v1.customers.retrieve(customer.id)
    stripe_client.v1.products.create(params={"name": "Counted"})
    emulator.clock()  # control endpoints are not API requests
    assert emulator.control("GET", "requests") == {
        "total": 3, "by_resource": {"POST /v1/customers": 1, "GET /v1/customers": 1, "POST /v1/products": 1}}
    emulator.reset()
    assert emulator.control("GET", "requests") == {"total": 0, "by_resource": {}}
