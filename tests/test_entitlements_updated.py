"""``entitlements.updated`` (issue 44, CONTRACT "Additions (sixth round)", "Entitlements"): a change of a billable's
features sends the Standard Webhooks event with the new features, once, through the notification outbox, to the
client app's webhook alone.

Plans follow Stripe through the real stripe SDK, the emulator and its webhooks; the client app is a real HTTP
receiver, and each body is checked with the ``standardwebhooks`` library against its signature.
"""
import json
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import func, select
from standardwebhooks import Webhook

from app.extensions import db
from app.models import Notification
from tests.receivers import NOTIFY_SECRET
from tests.support.accounts import register
from tests.support.billing import DAY, subscribe
from tests.support.entitlements import FEATURES, attach
from tests.support.notifications import hook_config, work
from tests.support.organizations import make_team
from tests.support.selling import resend

KIND = "entitlements.updated"


def sent(app, receiver):
    """Deliver the outbox; return every ``entitlements.updated`` body the app received so far, signature verified."""
    result = work(app, "--once")
    assert result.exit_code == 0, result.output
    signer = Webhook(NOTIFY_SECRET)
    bodies = [signer.verify(body, headers) for headers, body in receiver.requests]
    return [body for body in bodies if body["type"] == KIND]


@pytest.fixture
def live_config(http_receiver):
    return {"PLAN_FEATURES": FEATURES, **hook_config(http_receiver)}


def shown(flow):
    return flow.client.get("/entitlements", headers=flow.headers).json


def test_a_plan_change_sends_one_signed_event_with_the_new_features(flow, http_receiver):
    user_id = flow.me()["id"]
    flow.emulator.duplicate(100)  # every Stripe event arrives twice
    flow.pay(flow.intent("basic")["client_secret"])
    flow.deliver()
    (event,) = sent(flow.app, http_receiver)
    assert event["data"] == {"customer": {"user": user_id}, "plan": "basic", "features": shown(flow)["features"]}
    assert event["data"]["features"]["ai.tokens"]["limit"] == 1000 and event["timestamp"].endswith("Z")
    kinds = [n["kind"] for n in flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]]
    assert "subscribed" in kinds and KIND not in kinds, "an event for the app, not a notice to the person"

    # The same state again under a new event id passes the ledger and reaches CommitPlan: nothing changed.
    updates = [json.loads(str(e)) for e in flow.stripe.v1.events.list(
        params={"type": "customer.subscription.updated"}).data]
    for update in updates:
        assert resend(flow, {**update, "id": update["id"] + "_replayed"}).status_code == 200
    reset_at = shown(flow)["features"]["ai.tokens"]["reset_at"]
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    assert shown(flow)["features"]["ai.tokens"]["reset_at"] > reset_at, "the renewal reached the service"
    assert len(sent(flow.app, http_receiver)) == 1, "a duplicate or a renewal changes no feature: no event"

    swapped = flow.client.post("/subscription/swap", json={"price": flow.prices["pro"]}, headers=flow.headers)
    assert swapped.status_code == 200, swapped.json
    flow.deliver()
    first, upgraded = sent(flow.app, http_receiver)
    assert upgraded["data"] == {"customer": {"user": user_id}, "plan": "pro", "features": shown(flow)["features"]}
    assert upgraded["data"]["features"]["sso"] == {"type": "boolean", "enabled": True, "source": "plan"}


def test_stripe_features_and_sync_send_it_too_once_for_both_changes(flow, http_receiver):
    attach(flow, "sso")  # Stripe turns on what basic leaves off
    subscription_id = subscribe(flow)
    events = sent(flow.app, http_receiver)
    assert events[-1]["data"]["features"]["sso"] == {"type": "boolean", "enabled": True, "source": "stripe"}
    endpoint = flow.stripe.v1.webhook_endpoints.list().data[0]
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": True})
    flow.stripe.v1.subscriptions.cancel(subscription_id)  # its webhooks are lost: the endpoint is off
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": False})
    flow.deliver()
    assert len(sent(flow.app, http_receiver)) == len(events)
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"])
    assert result.exit_code == 0, result.output
    after = sent(flow.app, http_receiver)
    assert len(after) == len(events) + 1, "the plan and Stripe's features changed together: one event"
    assert after[-1]["data"]["plan"] == "free" and after[-1]["data"] == {
        "customer": {"user": flow.me()["id"]}, "plan": "free", "features": shown(flow)["features"]}
    assert after[-1]["data"]["features"]["sso"] == {"type": "boolean", "enabled": False, "source": "plan"}


@pytest.fixture
def app(make_app, prices, http_receiver):
    return make_app(PLAN_FEATURES=FEATURES, **hook_config(http_receiver))


def grant(runner, *args):
    result = runner.invoke(args=["entitlements", "grant", *args, "--reason", "pilot", "--by", "grace"])
    assert result.exit_code == 0, result.output


def test_an_override_sends_the_event_when_it_changes_a_feature(app, client, runner, http_receiver):
    user_id = register(client, email="eve@example.com")["id"]
    assert sent(app, http_receiver) == [], "a new customer has the free plan's features: nothing to tell"
    grant(runner, "--user", str(user_id), "ai.tokens", "--limit", "10")
    (granted,) = sent(app, http_receiver)
    assert granted["data"]["customer"] == {"user": user_id} and granted["data"]["plan"] == "free"
    assert granted["data"]["features"]["ai.tokens"] | {"reset_at": None} == {
        "type": "quota", "limit": 10, "used": 0, "reserved": 0, "remaining": 10, "reset_at": None,
        "overage": False, "source": "override"}
    grant(runner, "--user", str(user_id), "ai.tokens", "--limit", "10")
    assert len(sent(app, http_receiver)) == 1, "the same grant again changes nothing"
    revoked = runner.invoke(args=["entitlements", "revoke", "--user", str(user_id), "ai.tokens"])
    assert revoked.exit_code == 0, revoked.output
    back = sent(app, http_receiver)[-1]["data"]["features"]["ai.tokens"]
    assert (back["limit"], back["source"]) == (100, "plan")


def test_an_organization_gets_one_event_not_one_per_admin(app, client, runner, http_receiver):
    team = make_team(app, client)
    grant(runner, "--organization", team["org"], "sso", "--enabled", "true")
    (event,) = sent(app, http_receiver)
    assert event["data"]["customer"] == {"organization": team["org"]}
    assert event["data"]["features"]["sso"] == {"type": "boolean", "enabled": True, "source": "override"}
    listed = client.get("/notifications?limit=100", headers=team["bob"]).json["data"]
    assert KIND not in [n["kind"] for n in listed]


def test_without_a_client_webhook_nothing_is_queued(make_app, prices):
    app = make_app(PLAN_FEATURES=FEATURES)
    client, runner = app.test_client(), app.test_cli_runner()
    user_id = register(client)["id"]
    grant(runner, "--user", str(user_id), "sso", "--enabled", "true")
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Notification).where(Notification.kind == KIND)) == 0


def test_an_override_whose_until_passed_is_announced_once_by_announce_expired(app, client, runner, http_receiver):
    user_id = register(client, email="ida@example.com")["id"]
    # Minutes, not hours: the receiver's signature check allows five minutes between a body's time and its own.
    until = datetime.now(UTC) + timedelta(minutes=2)
    grant(runner, "--user", str(user_id), "ai.tokens", "--limit", "10", "--until", until.isoformat())
    grant(runner, "--user", str(user_id), "sso", "--enabled", "true")  # no end: still an override after
    assert [e["data"]["features"]["ai.tokens"]["source"] for e in sent(app, http_receiver)] == ["override"] * 2
    early = runner.invoke(args=["entitlements", "announce-expired"])
    assert early.exit_code == 0 and early.output.startswith("announced 0 "), early.output
    with time_machine.travel(until + timedelta(minutes=1), tick=False):
        done = runner.invoke(args=["entitlements", "announce-expired"])
        assert done.exit_code == 0 and done.output.startswith("announced 1 expired override of 1 customer"), done.output
        events = sent(app, http_receiver)
        assert len(events) == 3, "the app is told once the override's end passed, not at the next event"
        features = events[-1]["data"]["features"]
        assert (features["ai.tokens"]["limit"], features["ai.tokens"]["source"]) == (100, "plan")
        assert features["sso"]["source"] == "override"
        again = runner.invoke(args=["entitlements", "announce-expired"])
        assert again.output.startswith("announced 0 ") and len(sent(app, http_receiver)) == 3
