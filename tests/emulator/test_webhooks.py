"""Webhook endpoints, event signing, delivery order, retries, reorder and duplicates."""

from __future__ import annotations

import json
import time

import pytest
import stripe

from tests.support.emulator import activate
from tests.support.events import load_fixture


def verified(receiver):
    """Every received request verified with the SDK, as the service will do it."""
    out = []
    for req in receiver.requests:
        evt = stripe.Webhook.construct_event(req["body"], req["headers"]["Stripe-Signature"],
                                             receiver.secret)
        out.append(evt)
    return out


def test_signed_events_verify_with_sdk(stripe_client, emulator, webhook, customer, price):
    assert webhook.secret.startswith("whsec_")
    activate(stripe_client, customer, price)
    result = emulator.flush()
    assert result["failed"] == 0 and result["delivered"] == len(webhook.requests) == 12
    events = verified(webhook)
    assert [e.type for e in events][:3] == ["customer.created", "product.created",
                                          "price.created"]
    assert events[-1].type == "customer.subscription.updated"
    assert events[-1].data.previous_attributes.to_dict() == {
        "status": "incomplete", "default_payment_method": None}
    for evt in events:
        assert evt.id.startswith("evt_") and evt.object == "event"
        assert evt.api_version == "2026-10-28.endive" and evt.livemode is False
        assert evt.request.id.startswith("req_") and evt.request.idempotency_key
    header = webhook.requests[0]["headers"]["Stripe-Signature"]
    assert abs(int(header.split(",")[0][2:]) - time.time()) < 5  # real wall-clock time
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(webhook.requests[0]["body"], header, "whsec_wrong")
    assert emulator.delivery_state()["queue"] == []


def test_signature_uses_real_time_even_when_clock_advanced(stripe_client, emulator, webhook,
                                                           customer, price):
    sub = activate(stripe_client, customer, price)
    emulator.advance(40 * 86400)
    emulator.flush()
    last = verified(webhook)[-1]  # would fail tolerance if signed with emulator time
    assert last.created > time.time() + 30 * 86400
    assert stripe_client.v1.subscriptions.retrieve(sub.id).status == "active"


def test_event_payload_shape_matches_real_events(stripe_client, emulator, webhook, customer,
                                                 price):
    sub = activate(stripe_client, customer, price)
    emulator.fail_next_renewal(sub.id)
    emulator.advance(sub["items"].data[0].current_period_end - emulator.clock() + 1)
    stripe_client.v1.subscriptions.cancel(sub.id)
    emulator.flush()
    by_type = {}
    for req in webhook.requests:
        body = json.loads(req["body"])
        by_type.setdefault(body["type"], body)

    real_upd = load_fixture("03_customer.subscription.updated__prev_status_incomplete_to_active"
                            ".json")
    ours = by_type["customer.subscription.updated"]
    assert set(real_upd) == set(ours)  # envelope keys
    assert set(real_upd["request"]) == set(ours["request"])
    assert set(real_upd["data"]) == set(ours["data"])
    new_shape = load_fixture("10_customer.subscription.updated__new_shape_period_on_items__pay"
                             ".json")["data"]["object"]
    read_by_services = {"id", "object", "customer", "status", "items", "cancel_at_period_end",
                        "canceled_at", "ended_at", "latest_invoice", "default_payment_method",
                        "metadata", "trial_end", "trial_start", "created"}
    assert read_by_services <= set(new_shape) & set(ours["data"]["object"])
    assert "current_period_end" not in ours["data"]["object"]
    assert {"current_period_start", "current_period_end", "price", "plan"} <= \
        set(ours["data"]["object"]["items"]["data"][0])
    deleted = load_fixture("11_customer.subscription.deleted.json")
    assert set(deleted["data"]["object"]) - set(by_type["customer.subscription.deleted"]
                                                ["data"]["object"]) <= {
        "plan", "quantity", "current_period_end", "current_period_start", "discount",
        "tax_percent", "billing", "start"}  # legacy fields the 2026 API no longer has
    failed = load_fixture("20_invoice.payment_failed__parent_subscription_details__pay.json")
    ours_inv = by_type["invoice.payment_failed"]["data"]["object"]
    assert set(failed["data"]["object"]) <= set(ours_inv)
    assert ours_inv["parent"]["subscription_details"]["subscription"] == sub.id
    attached = load_fixture("13_payment_method.attached__pm_id.json")
    ours_pm = by_type["payment_method.attached"]["data"]["object"]
    assert {"id", "customer", "card", "type"} <= set(attached["data"]["object"]) & set(ours_pm)
    assert {"brand", "last4", "exp_month", "exp_year"} <= set(ours_pm["card"])


def test_customer_updated_previous_attributes(stripe_client, emulator, webhook, customer):
    pm = stripe_client.v1.payment_methods.attach("pm_card_mastercard",
                                                 params={"customer": customer.id})
    stripe_client.v1.customers.update(customer.id, params={
        "invoice_settings": {"default_payment_method": pm.id}, "email": "new@example.com"})
    emulator.flush()
    evt = [e for e in verified(webhook) if e.type == "customer.updated"][0]
    real = load_fixture("14_customer.updated__default_pm_set.json")
    assert set(real["data"]["previous_attributes"]) <= set(evt.data.previous_attributes.to_dict())
    assert evt.data.previous_attributes.to_dict() == {
        "invoice_settings": {"default_payment_method": None}, "email": "jo@example.com"}
    stripe_client.v1.customers.delete(customer.id)
    emulator.flush()
    assert verified(webhook)[-1].type == "customer.deleted"


def test_retry_after_receiver_error_background_worker(stripe_client, emulator, webhook):
    webhook.statuses = [500, 503]
    emulator.resume_delivery()
    stripe_client.v1.customers.create(params={"email": "retry@example.com"})
    webhook.wait_for(3, timeout=5)
    assert [r["status"] for r in webhook.requests] == [500, 503, 200]
    assert len({r["body"] for r in webhook.requests}) == 1  # same event body each time
    deadline = time.monotonic() + 5
    while len(log := emulator.delivery_state()["log"]) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)  # the receiver answers before the emulator logs the attempt
    assert [entry["status"] for entry in log] == [500, 503, 200]
    assert log[-1]["final"] == "delivered" and log[0]["retry_in"] == 0.2
    evt = stripe_client.v1.events.retrieve(log[0]["event"])
    assert evt.pending_webhooks == 0


def test_flush_leaves_failures_queued(stripe_client, emulator, webhook):
    webhook.statuses = [500]
    stripe_client.v1.customers.create(params={"email": "a@example.com"})
    first = emulator.flush()
    assert first["delivered"] == 0 and first["failed"] == 1
    assert first["attempts"][0]["status"] == 500
    assert len(emulator.delivery_state()["queue"]) == 1
    second = emulator.flush()
    assert second["delivered"] == 1 and emulator.delivery_state()["queue"] == []


def test_reorder_and_duplicate(stripe_client, emulator, webhook):
    emulator.reorder(3)
    for i in range(3):
        stripe_client.v1.customers.create(params={"email": f"r{i}@example.com"})
    emulator.flush()
    emails = [e.data.object.email for e in verified(webhook)]
    assert emails == ["r2@example.com", "r1@example.com", "r0@example.com"]
    webhook.requests.clear()
    emulator.duplicate(2)
    for i in range(3):
        stripe_client.v1.customers.create(params={"email": f"d{i}@example.com"})
    emulator.flush()
    ids = [e.id for e in verified(webhook)]
    assert len(ids) == 5 and ids[0] == ids[1] and ids[2] == ids[3] and ids[3] != ids[4]


def test_endpoint_filters_disable_and_crud(stripe_client, emulator, receiver):
    emulator.pause_delivery()
    we = stripe_client.v1.webhook_endpoints.create(params={
        "url": receiver.url, "enabled_events": ["customer.updated"]})
    receiver.secret = we.secret
    assert we.id.startswith("we_") and we.status == "enabled"
    cus = stripe_client.v1.customers.create(params={"email": "f@example.com"})
    stripe_client.v1.customers.update(cus.id, params={"name": "F"})
    emulator.flush()
    assert [e.type for e in verified(receiver)] == ["customer.updated"]
    got = stripe_client.v1.webhook_endpoints.retrieve(we.id)
    assert got.url == receiver.url and "secret" not in got
    stripe_client.v1.webhook_endpoints.update(we.id, params={"disabled": True})
    stripe_client.v1.customers.update(cus.id, params={"name": "G"})
    emulator.flush()
    assert len(receiver.requests) == 1
    upd = stripe_client.v1.webhook_endpoints.update(we.id, params={
        "disabled": False, "enabled_events": ["*"]})
    assert upd.status == "enabled" and upd.enabled_events == ["*"]
    assert [w.id for w in stripe_client.v1.webhook_endpoints.list().data] == [we.id]
    deleted = stripe_client.v1.webhook_endpoints.delete(we.id)
    assert deleted.deleted is True
    with pytest.raises(stripe.InvalidRequestError):
        stripe_client.v1.webhook_endpoints.retrieve(we.id)


def test_events_list_and_retrieve(stripe_client, customer, price):
    activate(stripe_client, customer, price)
    page = stripe_client.v1.events.list(params={"type": "invoice.*", "limit": 2})
    assert [e.type for e in page.data] == ["invoice.payment_succeeded", "invoice.paid"]
    assert page.has_more
    rest = stripe_client.v1.events.list(params={"type": "invoice.*",
                                                "starting_after": page.data[-1].id})
    assert [e.type for e in rest.data] == ["invoice.finalized", "invoice.created"]
    evt = stripe_client.v1.events.retrieve(page.data[0].id)
    assert evt.type == "invoice.payment_succeeded"
    assert evt.data.object.status == "paid"
