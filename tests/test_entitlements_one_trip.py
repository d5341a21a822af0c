"""A consume in one round trip (``app.entitlements.fast``, PostgreSQL): a worker's copies of the key and the customer
are used only while the database still agrees, so whatever changes the customer's features or the key counts
from the very next consume, as on the full path (CONTRACT "Entitlements": never stale).

Each test warms the worker's copies with two consumes, checks that the second took the one statement (on
PostgreSQL; elsewhere every consume takes the full path, and the same answers must come from it), changes one
thing through the service's own paths, and consumes again.
"""
import pytest
from sqlalchemy import select

from app.extensions import db
from app.models import ServiceKey
from tests.support.accounts import PASSWORD
from tests.support.billing import subscribe
from tests.support.entitlements import FEATURES, consume, service_key, statements_of


@pytest.fixture
def live_config():
    return {"PLAN_FEATURES": FEATURES}


@pytest.fixture
def warm(flow):
    """``(user_id, key)`` after two consumes of 1 unit of ``ai.tokens``, the second checked to be one statement."""
    key = service_key(flow.app.test_cli_runner(), "entitlements:check")
    user_id = flow.me()["id"]
    consume(flow.client, key, user_id, 1, "warm-1")
    second, statements = statements_of(flow.app, lambda: consume(flow.client, key, user_id, 1, "warm-2"))
    assert second["used"] == 2
    with flow.app.app_context():
        one_trip = db.engine.dialect.name == "postgresql"
    assert (statements == ["WITH"]) == one_trip, statements
    return user_id, key


def test_a_plan_bought_counts_from_the_next_consume(flow, warm):
    user_id, key = warm
    assert consume(flow.client, key, user_id, 150, "free-plan")["allowed"] is False, "the free plan's 100"
    subscribe(flow, "basic")  # the webhook writes the subscription: its trigger gives the customer a new version
    answer = consume(flow.client, key, user_id, 1, "basic-plan")
    assert (answer["allowed"], answer["limit"], answer["used"]) == (True, 1000, 1), "the plan's own period"
    assert consume(flow.client, key, user_id, 150, "again")["used"] == 151


def test_an_override_counts_from_the_next_consume(flow, warm):
    user_id, key = warm
    granted = flow.app.test_cli_runner().invoke(args=["entitlements", "grant", "--user", str(user_id), "ai.tokens",
                                                      "--limit", "5", "--reason", "trial", "--by", "support"])
    assert granted.exit_code == 0, granted.output
    refused = consume(flow.client, key, user_id, 4, "over")
    assert (refused["allowed"], refused["limit"], refused["source"]) == (False, 5, "override")
    assert consume(flow.client, key, user_id, 3, "fits")["remaining"] == 0


def test_a_revoked_key_is_refused_at_once(flow, warm):
    user_id, key = warm
    with flow.app.app_context():
        key_id = db.session.scalar(select(ServiceKey.id))
    assert flow.app.test_cli_runner().invoke(args=["revoke-service-key", str(key_id)]).exit_code == 0
    answer = flow.client.post("/entitlements/check", headers=key, json={
        "customer": {"user": user_id}, "feature": "ai.tokens", "consume": True, "identifier": "after-revoke"})
    assert answer.status_code == 401, answer.json


def test_a_deleted_customer_is_not_found_and_nothing_is_taken_for_it(flow, warm):
    user_id, key = warm
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    answer = flow.client.post("/entitlements/check", headers=key, json={
        "customer": {"user": user_id}, "feature": "ai.tokens", "consume": True, "identifier": "ghost"})
    assert answer.status_code == 404, answer.json


def test_a_consume_that_reaches_a_threshold_still_tells_the_person_once(flow, warm):
    user_id, key = warm

    def alerts():
        data = flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]
        return [(n["kind"], n["data"]["threshold"]) for n in data if n["kind"].startswith("quota_")]

    assert consume(flow.client, key, user_id, 77, "to-79")["used"] == 79 and alerts() == []
    assert consume(flow.client, key, user_id, 1, "to-80")["used"] == 80
    assert alerts() == [("quota_warning", 80)]
    assert consume(flow.client, key, user_id, 1, "to-81")["used"] == 81 and alerts() == [("quota_warning", 80)]
