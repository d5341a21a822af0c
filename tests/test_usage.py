"""Usage-based billing (issue 34): service keys, POST /usage/events validated whole, the delivery worker,
GET /usage, and the CLI. The emulator's own meter summaries are the witness of what Stripe received."""
import json
import time

import pytest
import time_machine
from sqlalchemy import func, select

from app.extensions import db
from app.models import Organization, UsageEvent, User
from tests.support.accounts import bearer, login, register
from tests.support.organizations import make_team
from tests.support.usage import add_customer_user, event, make_key


@pytest.fixture
def meter(stripe_client):
    return stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})


@pytest.fixture
def key(runner):
    return {"Authorization": f"Bearer {make_key(runner)}"}


@pytest.fixture
def customer_user(app, provider_customer):
    with app.app_context():
        return db.session.scalar(select(User.id).where(User.provider_id == provider_customer))


def stored(app):
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(UsageEvent))


def summed(stripe_client, meter, customer):
    now = int(time.time())
    return sum(s.aggregated_value for s in stripe_client.v1.billing.meters.event_summaries.list(
        meter.id, params={"customer": customer, "start_time": now - now % 60 - 86400,
                          "end_time": now - now % 60 + 600}).data)


def test_a_batch_is_stored_once_and_delivered_once(app, client, runner, key, meter, customer_user, stripe_client,
                                                   provider_customer):
    batch = {"events": [event(customer_user, "req-1", 5), event(customer_user, "req-2", 7),
                        event(customer_user, "req-1", 5)]}
    first = client.post("/usage/events", json=batch, headers=key)
    assert (first.status_code, first.json) == (202, {"accepted": 2, "duplicates": 1})
    again = client.post("/usage/events", json=batch, headers=key)
    assert (again.status_code, again.json) == (202, {"accepted": 0, "duplicates": 3})
    assert stored(app) == 2
    listed = runner.invoke(args=["usage-events", "--json"])
    assert [row["identifier"] for row in json.loads(listed.output)] == ["req-1", "req-2"]

    result = runner.invoke(args=["deliver-usage", "--once"])
    assert result.exit_code == 0, result.output
    assert "delivered 2, failed 0" in result.output
    assert summed(stripe_client, meter, provider_customer) == 12
    assert runner.invoke(args=["usage-events"]).output.strip() == "0 usage events"


def test_a_bad_event_refuses_the_whole_batch(app, client, key, meter, customer_user):
    now = int(time.time())
    batch = {"events": [event(customer_user, "ok"), event(customer_user, "old", timestamp=now - 36 * 86400),
                        event(customer_user, "ahead", timestamp=now + 600), event(customer_user, "é"),
                        event(customer_user, "neg", -1)]}
    answer = client.post("/usage/events", json=batch, headers=key)
    assert answer.status_code == 422 and answer.json["error"]["code"] == "validation_error"
    assert set(answer.json["error"]["details"]) == {"events.1.timestamp", "events.2.timestamp",
                                                    "events.3.identifier", "events.4.value"}
    for body in ({"events": []}, {"events": [event(customer_user, str(n)) for n in range(101)]}, {}):
        assert client.post("/usage/events", json=body, headers=key).status_code == 422
    both = event(customer_user, "x") | {"customer": {"user": customer_user, "organization": "org_1"}}
    assert "events.0.customer._schema" in client.post("/usage/events", json={"events": [both]},
                                                      headers=key).json["error"]["details"]
    assert stored(app) == 0


def test_unknown_meters_and_customers_without_stripe_store_nothing(app, client, key, meter, customer_user):
    unknown = client.post("/usage/events", json={"events": [
        event(customer_user, "a"), event(customer_user, "b") | {"event_name": "minutes"}]}, headers=key)
    assert unknown.status_code == 422 and unknown.json["error"]["code"] == "unknown_meter"
    assert list(unknown.json["error"]["details"]) == ["events.1.event_name"]
    new = register(client, email="free@example.com")
    for customer in ({"user": new["id"]}, {"user": 10**9}, {"organization": "org_unknown"}):
        refused = client.post("/usage/events", json={"events": [
            event(customer_user, "c"), event(customer_user, "d") | {"customer": customer}]}, headers=key)
        assert refused.status_code == 422 and refused.json["error"]["code"] == "no_customer"
        assert list(refused.json["error"]["details"]) == ["events.1.customer"]
    assert stored(app) == 0


def test_only_a_live_service_key_reports(app, client, runner, meter, customer_user):
    batch = {"events": [event(customer_user, "k")]}
    register(client, email="user@example.com")
    user_token = bearer(login(client, email="user@example.com"))
    refused = client.post("/usage/events", json=batch, headers=user_token)
    assert (refused.status_code, refused.json["error"]["code"]) == (403, "insufficient_scope")
    assert 'scope="usage:write"' in refused.headers["WWW-Authenticate"]
    assert client.post("/usage/events", json=batch).status_code == 401
    plain = make_key(runner, "old")
    key_id = plain.split("|")[0]
    assert client.post("/usage/events", json=batch, headers={"Authorization": f"Bearer {plain}x"}).status_code == 401
    revoked = runner.invoke(args=["revoke-service-key", key_id])
    assert revoked.exit_code == 0 and f"revoked service key {key_id}" in revoked.output
    answer = client.post("/usage/events", json=batch, headers={"Authorization": f"Bearer {plain}"})
    assert (answer.status_code, answer.json["error"]["code"]) == (401, "unauthenticated")
    listed = runner.invoke(args=["service-keys"]).output
    assert "old\tusage:write" in listed and "revoked" in listed and "1 service key" in listed
    assert stored(app) == 0


def test_service_key_commands_fail_in_one_line(runner):
    bad = runner.invoke(args=["create-service-key", "x", "--ability", "subscription:write"])
    assert bad.exit_code == 1 and bad.output.count("\n") == 1 and "unknown ability" in bad.output
    missing = runner.invoke(args=["revoke-service-key", "999"])
    assert missing.exit_code == 1 and missing.output.count("\n") == 1


def test_refusals_fail_and_replay_queues_again(app, client, runner, key, meter, customer_user, emulator,
                                               stripe_client, provider_customer):
    assert client.post("/usage/events", json={"events": [event(customer_user, "r1", 3)]}, headers=key).status_code \
        == 202
    stripe_client.v1.billing.meters.deactivate(meter.id)
    app.extensions.pop("usage_meters", None)  # the worker's copy is read afresh (its TTL passed)
    assert "failed 1" in runner.invoke(args=["deliver-usage", "--once"]).output
    failed = runner.invoke(args=["usage-events", "--failed"]).output
    assert "r1" in failed and "no active meter" in failed
    stripe_client.v1.billing.meters.reactivate(meter.id)
    app.extensions.pop("usage_meters", None)
    with app.app_context():
        event_id = db.session.scalar(select(UsageEvent.id))
    assert runner.invoke(args=["usage-replay", str(event_id)]).output.strip() == "queued 1 usage event again"
    assert "delivered 1" in runner.invoke(args=["deliver-usage", "--once"]).output
    assert summed(stripe_client, meter, provider_customer) == 3
    again = runner.invoke(args=["usage-replay", str(event_id)])
    assert again.exit_code == 1 and "was delivered" in again.output


def test_retries_ride_out_429_and_500(app, client, runner, key, meter, customer_user, emulator, stripe_client,
                                      provider_customer):
    batch = {"events": [event(customer_user, f"e{n}", n) for n in range(1, 21)]}
    assert client.post("/usage/events", json=batch, headers=key).json == {"accepted": 20, "duplicates": 0}
    emulator.add_fault("/v1/billing/meter_events", status=429, count=10, probability=0.5)
    emulator.add_fault("/v1/billing/meter_events", status=500, count=5, after=True)  # received, answer lost
    result = runner.invoke(args=["deliver-usage", "--once"])
    assert "delivered 20, failed 0" in result.output and "retried 0" not in result.output
    assert summed(stripe_client, meter, provider_customer) == sum(range(1, 21))
    assert len(emulator.store.meter_events) == 20, "each event reached Stripe once"


def test_usage_reads_stripes_summaries_and_what_is_pending(app, client, runner, key, meter, customer_user,
                                                           provider_customer):
    headers = bearer(fresh_login(app, customer_user))
    client.post("/usage/events", json={"events": [event(customer_user, "u1", 4)]}, headers=key)
    now = int(time.time())
    query = {"start": now - now % 60 - 3600, "end": now - now % 60 + 3600}
    before = client.get("/usage", query_string=query, headers=headers)
    assert before.status_code == 200, before.json
    assert before.json["data"] == [{"event_name": "tokens", "meter": meter.id, "value": 0, "pending": 4}]
    runner.invoke(args=["deliver-usage", "--once"])
    after = client.get("/usage", headers=headers).json
    assert after["data"][0] | {"value": after["data"][0]["value"]} == {"event_name": "tokens", "meter": meter.id,
                                                                       "value": 4, "pending": 0}
    assert after["start"] <= now < after["end"], "the current calendar month without a subscription"
    bad = client.get("/usage", query_string={"start": 61, "end": 120}, headers=headers)
    assert bad.status_code == 422 and "start" in bad.json["error"]["details"]
    misspelt = client.get("/usage", query_string={"from": 60}, headers=headers)
    assert misspelt.status_code == 422 and list(misspelt.json["error"]["details"]) == ["from"]


def fresh_login(app, user_id):
    from app.auth import tokens

    with app.app_context():
        _, plain_text = tokens.issue(db.session.get(User, user_id))
        db.session.commit()
    return {"access_token": plain_text}


def test_readiness_and_metrics_show_the_backlog(make_app, meter, stripe_client):
    app = make_app(USAGE_READY_MAX_AGE=1, METRICS_ENABLED=True)
    client, runner = app.test_client(), app.test_cli_runner()
    key = {"Authorization": f"Bearer {make_key(runner)}"}
    customer = stripe_client.v1.customers.create(params={"email": "m@example.com"}).id
    user_id = add_customer_user(app, customer, "m@example.com")
    assert client.get("/health/ready").status_code == 200
    client.post("/usage/events", json={"events": [event(user_id, "m1", 2)]}, headers=key)
    with time_machine.travel(time.time() + 1.5):
        ready = client.get("/health/ready")
        scraped = client.get("/metrics").get_data(as_text=True)
    assert ready.status_code == 503 and ready.json["error"]["details"]["checks"]["usage_delivery"].startswith(
        "unavailable")
    age = next(line for line in scraped.splitlines() if line.startswith("usage_oldest_undelivered_age_seconds "))
    assert float(age.split()[1]) >= 1
    runner.invoke(args=["deliver-usage", "--once"])
    assert client.get("/health/ready").status_code == 200
    assert 'usage_events_total{outcome="delivered"}' in client.get("/metrics").get_data(as_text=True)


def test_the_renewal_invoice_on_a_test_clock_bills_exactly_the_usage_reported(app, client, key, meter, emulator,
                                                                             stripe_client, runner):
    licensed = stripe_client.v1.prices.create(params={"currency": "usd", "unit_amount": 1000,
                                                      "recurring": {"interval": "month"},
                                                      "product_data": {"name": "Pro"}})
    metered = stripe_client.v1.prices.create(params={
        "currency": "usd", "unit_amount": 2, "product": licensed.product,
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}})
    clock = stripe_client.v1.test_helpers.test_clocks.create(params={"frozen_time": int(time.time()) - 60})
    customer = stripe_client.v1.customers.create(params={
        "email": "metered@example.com", "test_clock": clock.id, "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}}).id
    user_id = add_customer_user(app, customer, "metered@example.com")
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                        "customer": customer, "items": [
        {"price": licensed.id}, {"price": metered.id}]})
    values = [120, 3, 4000, 77]
    batch = {"events": [event(user_id, f"clock-{n}", value) for n, value in enumerate(values)]}
    assert client.post("/usage/events", json=batch, headers=key).json == {"accepted": 4, "duplicates": 0}
    assert client.post("/usage/events", json=batch, headers=key).json == {"accepted": 0, "duplicates": 4}
    assert "delivered 4" in runner.invoke(args=["deliver-usage", "--once"]).output
    stripe_client.v1.test_helpers.test_clocks.advance(clock.id, params={"frozen_time": clock.frozen_time + 32 * 86400})
    invoice = stripe_client.v1.subscriptions.retrieve(sub.id, params={"expand": ["latest_invoice"]}).latest_invoice
    assert invoice.billing_reason == "subscription_cycle"
    usage = [line for line in invoice.lines.data if line.pricing.price_details.price == metered.id]
    assert [(line.quantity, line.amount) for line in usage] == [(sum(values), sum(values) * 2)]
    assert invoice.amount_due == 1000 + sum(values) * 2


def test_an_organisations_usage_is_its_own_customers_and_for_its_managers(app, client, runner, key, meter,
                                                                         stripe_client):
    people = make_team(app, client)
    customer = stripe_client.v1.customers.create(params={"email": "billing@acme.example"}).id
    with app.app_context():
        db.session.get(Organization, people["org"]).provider_id = customer
        db.session.commit()
    org_event = {"identifier": "o1", "event_name": "tokens", "customer": {"organization": people["org"]}, "value": 9}
    assert client.post("/usage/events", json={"events": [org_event]}, headers=key).status_code == 202
    runner.invoke(args=["deliver-usage", "--once"])
    assert summed(stripe_client, meter, customer) == 9, "reported to the organisation's own customer"
    now = int(time.time())
    query = {"start": now - now % 60 - 3600, "end": now - now % 60 + 3600}
    read = client.get(f"/organizations/{people['org']}/usage", query_string=query, headers=people["bob"])
    assert read.status_code == 200 and read.json["data"][0]["value"] == 9, read.json
    member = client.get(f"/organizations/{people['org']}/usage", query_string=query, headers=people["cy"])
    assert member.status_code == 403 and member.json["error"]["code"] == "forbidden"
    outsider = bearer(login(client, email="ada@example.com"))
    assert client.get("/organizations/org_nope/usage", headers=outsider).status_code == 404
