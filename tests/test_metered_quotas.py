"""Metered quotas (CONTRACT "Entitlements"): every unit a consume takes of a quota with a ``meter`` reaches that
Billing Meter through the usage ledger, exactly once, under an identifier derived from the consume's; with
``overage`` a consume passes the limit and the meter's price bills it at the renewal.

Through HTTP, the CLI runner (the delivery worker), the real stripe SDK and the emulator.
"""
import pytest

from app.entitlements.metering import meter_identifier
from tests.support.billing import DAY, subscribe
from tests.support.usage import event, metered_plans, prices  # noqa: F401  (the plans' prices)

FEATURES = {"free": {"ai.tokens": {"limit": 0}},
            "basic": {"ai.tokens": {"limit": 100, "meter": "tokens", "overage": True}},
            "pro": {"ai.tokens": {"limit": 100, "meter": "tokens"}}}


@pytest.fixture
def live_config(stripe_client, prices):  # noqa: F811
    """A ``tokens`` meter priced per plan (``basic`` 2, ``pro`` 1 a token), the quotas on it."""
    return {**metered_plans(stripe_client, prices), "PLAN_FEATURES": FEATURES}


def service_key(flow, ability):
    runner = flow.app.test_cli_runner()
    answer = runner.invoke(args=["create-service-key", "backend", "--ability", ability])
    return {"Authorization": f"Bearer {answer.output.strip().splitlines()[-1]}"}


def consume(flow, key, required, identifier):
    answer = flow.client.post("/entitlements/check", headers=key, json={
        "customer": {"user": flow.me()["id"]}, "feature": "ai.tokens", "required": required, "consume": True,
        "identifier": identifier})
    assert answer.status_code == 200, answer.json
    return answer.json


def metered(flow, subscription_id):
    return flow.stripe.v1.billing.meters.list().data[0], flow.stripe.v1.subscriptions.retrieve(subscription_id).customer


def test_each_consumed_unit_is_billed_once_and_overage_by_the_meters_price(flow):
    subscription_id = subscribe(flow, "basic")
    key = service_key(flow, "entitlements:check")
    assert consume(flow, key, 80, "job-1")["allowed"] is True
    assert consume(flow, key, 80, "job-1")["consumed"] == 80, "the same answer again"
    past = consume(flow, key, 50, "job-2")
    assert (past["allowed"], past["used"], past["overage"]) == (True, 130, True), "overage: past the limit"
    reserved = flow.client.post("/entitlements/reservations", headers=key, json={
        "customer": {"user": flow.me()["id"]}, "feature": "ai.tokens", "amount": 30, "identifier": "job-1"})
    assert reserved.status_code == 201, reserved.json
    settled = flow.client.post(f"/entitlements/reservations/{reserved.json['id']}/settle", headers=key,
                               json={"amount": 20})
    assert settled.status_code == 200, settled.json
    runner = flow.app.test_cli_runner()
    delivered = runner.invoke(args=["deliver-usage", "--once"])
    assert "delivered 3, failed 0" in delivered.output, delivered.output
    assert "delivered 0" in runner.invoke(args=["deliver-usage", "--once"]).output, "nothing sent twice"
    meter, customer = metered(flow, subscription_id)
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    renewal = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data[0]
    usage = [(line.quantity, line.amount) for line in renewal.lines.data
             if line.pricing.price_details.price == flow.prices["basic_usage"]]
    assert usage == [(150, 150 * 2)], "80 + 50 consumed and 20 settled, billed once at the meter's price"
    assert meter.event_name == "tokens" and customer


def test_without_overage_a_consume_past_the_limit_takes_and_bills_nothing(flow):
    subscribe(flow, "pro")
    key = service_key(flow, "entitlements:check")
    assert consume(flow, key, 100, "all")["allowed"] is True
    refused = consume(flow, key, 1, "one-more")
    assert (refused["allowed"], refused["consumed"]) == (False, 0)
    assert "delivered 1, failed 0" in flow.app.test_cli_runner().invoke(args=["deliver-usage", "--once"]).output


def test_a_report_cannot_take_a_metered_quotas_identifier(flow):
    """The derived identifiers are the service's: a report under one would be a duplicate, and a unit unbilled."""
    subscribe(flow, "basic")
    key = service_key(flow, "usage:write")
    taken = meter_identifier("job-1")
    answer = flow.client.post("/usage/events", headers=key, json={"events": [event(flow.me()["id"], taken, 5)]})
    assert answer.status_code == 422 and "events.0.identifier" in answer.json["error"]["details"], answer.json
    assert meter_identifier("x" * 100).startswith("ent_ch_") and len(meter_identifier("x" * 100)) <= 100
    assert meter_identifier("job-1") != meter_identifier("job-1", reservation=True)


def test_crossing_each_threshold_tells_the_owner_once_per_period(flow):
    """``ENTITLEMENT_ALERT_THRESHOLDS`` 80,100: 79 crosses nothing, 80 is reached, a repeat tells nobody again,
    the limit is ``quota_reached``; the next period tells again."""
    subscribe(flow, "pro")
    key = service_key(flow, "entitlements:check")

    def alerts():
        data = flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]
        return [(n["kind"], n["data"]["threshold"]) for n in data if n["kind"].startswith("quota_")]

    consume(flow, key, 79, "a")
    assert alerts() == []
    consume(flow, key, 1, "b")
    consume(flow, key, 1, "b")
    assert alerts() == [("quota_warning", 80)]
    consume(flow, key, 20, "c")
    assert alerts() == [("quota_reached", 100), ("quota_warning", 80)]
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    consume(flow, key, 100, "d")
    assert alerts() == [("quota_reached", 100), ("quota_warning", 80), ("quota_reached", 100), ("quota_warning", 80)]
