"""The failed-event ledger, ``flask webhook-events``, ``webhook-replay``, ``prune-webhook-events`` and
``PROVIDER_LIVEMODE`` (issue 11 items 1 and 7; CONTRACT "Additions")."""
import json
import re
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import select

from app.billing import objects
from app.extensions import db
from app.models import FailedWebhookEvent, Notification, Subscription, User, WebhookEvent
from app.signals import webhook_handled
from tests.signing import WEBHOOK_SECRET
from tests.support.config import BASE_CONFIG
from tests.support.events import FIXTURES, deliver, load_event

CUSTOMER = "cus_00000000000000"
SUBSCRIPTION = "sub_000000000000000000000000"
T1 = datetime(2022, 4, 1, 9, 0, tzinfo=UTC)  # inside the fixtures' billing period


def broken_listener(sender, event, **extra):
    raise RuntimeError("listener broke")


@pytest.fixture
def customer(app):
    with app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER))
        db.session.commit()


def post(client, event, at=T1):
    """Deliver ``event`` signed at ``at``, the service's clock moved there too."""
    with time_machine.travel(at, tick=False):
        return deliver(client, event, timestamp=int(time.time()))


def post_failing(client, event, at=T1):
    with webhook_handled.connected_to(broken_listener):
        return post(client, event, at)


def records(app):
    with app.app_context():
        db.session.expire_all()
        return db.session.scalars(select(FailedWebhookEvent).order_by(FailedWebhookEvent.id)).all()


def snapshot(app):
    with app.app_context():
        db.session.expire_all()
        return {
            "ledger": db.session.scalars(select(WebhookEvent.id).order_by(WebhookEvent.id)).all(),
            "subscriptions": db.session.execute(select(
                Subscription.provider_status, Subscription.cancel_at_period_end,
                Subscription.provider_updated_at)).tuples().all(),
            "notifications": db.session.execute(select(Notification.kind, Notification.event_id)
                                                .order_by(Notification.id)).tuples().all(),
            "plans": db.session.scalars(select(User.plan)).all(),
        }


def cli_json(runner, *args):
    result = runner.invoke(args=["webhook-events", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_failed_event_is_recorded_after_the_rollback_counted_and_resolved_by_a_redelivery(
        app, client, runner, customer, configure):
    configure(PROPAGATE_EXCEPTIONS=False)
    event = load_event("02")
    assert post_failing(client, event).status_code == 500
    later = T1 + timedelta(minutes=5)
    assert post_failing(client, event, at=later).status_code == 500
    assert snapshot(app) == {"ledger": [], "subscriptions": [], "notifications": [], "plans": [None]}

    (record,) = records(app)
    assert (record.id, record.type, record.customer, record.attempts) == (
        event["id"], "customer.subscription.created", CUSTOMER, 2)
    assert (record.error_class, record.error_message) == ("RuntimeError", "listener broke")
    assert (record.first_failed_at, record.last_failed_at, record.resolved_at) == (T1, later, None)
    assert json.loads(record.payload) == event

    (listed,) = cli_json(runner, "--failed")
    assert listed == {"id": event["id"], "type": "customer.subscription.created", "customer": CUSTOMER,
                      "attempts": 2, "error_class": "RuntimeError", "error_message": "listener broke",
                      "first_failed_at": "2022-04-01T09:00:00Z", "last_failed_at": "2022-04-01T09:05:00Z",
                      "resolved_at": None}
    table = runner.invoke(args=["webhook-events", "--failed"]).output.splitlines()
    assert table[0].split() == ["EVENT", "TYPE", "CUSTOMER", "ATTEMPTS", "FIRST", "FAILED", "LAST", "FAILED",
                                "RESOLVED", "ERROR"]
    assert table[1].split()[:4] == [event["id"], "customer.subscription.created", CUSTOMER, "2"]
    assert table[1].endswith("RuntimeError: listener broke")

    resolved_at = T1 + timedelta(hours=1)
    assert post(client, event, at=resolved_at).status_code == 200
    assert records(app)[0].resolved_at == resolved_at
    assert cli_json(runner, "--failed") == []
    assert runner.invoke(args=["webhook-events", "--failed"]).output.strip() == "no failed events"
    assert cli_json(runner)[0]["resolved_at"] == "2022-04-01T10:00:00Z"
    assert snapshot(app)["plans"] == ["pro"]


def test_a_replay_takes_the_delivery_path_and_a_second_replay_changes_nothing(app, client, runner, customer, configure):
    configure(PROPAGATE_EXCEPTIONS=False)
    assert post(client, load_event("01", created=1648320100)).status_code == 200
    activating = load_event("03", created=1648320200)
    assert post_failing(client, activating).status_code == 500
    assert snapshot(app)["subscriptions"][0][0] == "incomplete"

    with time_machine.travel(T1, tick=False):
        result = runner.invoke(args=["webhook-replay", activating["id"]])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"{activating['id']}: processed"
    replayed = snapshot(app)
    # The listeners ran: the plan and the "subscribed" notification, as a delivery would have left them.
    assert replayed["plans"] == ["pro"] and replayed["notifications"] == [("subscribed", activating["id"])]
    assert replayed["subscriptions"][0][0] == "active"
    assert records(app)[0].resolved_at == T1

    result = runner.invoke(args=["webhook-replay", activating["id"]])
    assert result.exit_code == 0 and result.output.strip() == f"{activating['id']}: duplicate"
    assert post(client, activating).status_code == 200
    assert snapshot(app) == replayed


def test_a_replayed_event_older_than_the_applied_state_does_not_roll_it_back(app, client, runner, customer, configure):
    configure(PROPAGATE_EXCEPTIONS=False)
    older = load_event("01", created=1648320100)  # incomplete
    assert post_failing(client, older).status_code == 500
    assert post(client, load_event("03", created=1648320200)).status_code == 200  # active, newer
    result = runner.invoke(args=["webhook-replay", "--failed"])
    assert result.exit_code == 0, result.output
    state = snapshot(app)
    assert state["subscriptions"][0][0] == "active" and state["plans"] == ["pro"]
    assert sorted(state["ledger"]) == sorted([older["id"], "evt_000000000000000000000103"])


def test_replay_failed_reports_each_event_and_exits_non_zero_while_they_still_fail(
        app, client, runner, customer, configure):
    configure(PROPAGATE_EXCEPTIONS=False)
    first, second = load_event("01", created=1648320100), load_event("03", created=1648320200)
    for event in (first, second):
        assert post_failing(client, event).status_code == 500
    with webhook_handled.connected_to(broken_listener):
        result = runner.invoke(args=["webhook-replay", "--failed"])
    assert result.exit_code == 1
    assert f"{first['id']}: FAILED (RuntimeError: listener broke)" in result.output
    assert "2 event(s) failed again" in result.output
    assert [r.attempts for r in records(app)] == [2, 2]
    assert snapshot(app)["ledger"] == []

    result = runner.invoke(args=["webhook-replay", "--failed"])
    assert result.exit_code == 0, result.output
    assert sorted(result.output.split()) == sorted([f"{first['id']}:", "processed", f"{second['id']}:", "processed"])
    assert cli_json(runner, "--failed") == []


@pytest.mark.parametrize("args, message", [
    (["evt_unknown"], "Error: Invalid value for EVENT_ID: no failed event evt_unknown"),
    ([], "Error: name at least one EVENT_ID, or pass --failed"),
    (["evt_x", "--failed"], "Error: name EVENT_IDs or pass --failed, not both"),
])
def test_webhook_replay_refuses_bad_arguments_in_one_line(runner, args, message):
    result = runner.invoke(args=["webhook-replay", *args])
    # One line (app/cli.py); the test runner names the command group after the app.
    assert result.exit_code == 2 and result.output.splitlines() == [f"{message} (see 'app webhook-replay --help')"]
    assert "Traceback" not in result.output


def test_webhook_replay_failed_with_nothing_failing_says_so(runner):
    result = runner.invoke(args=["webhook-replay", "--failed"])
    assert result.exit_code == 0 and result.output == "no failed events to replay\n"


def _luhn_valid(digits):
    total = 0
    for index, digit in enumerate(int(d) for d in reversed(digits)):
        total += digit if index % 2 == 0 else (digit * 2 - 9 if digit > 4 else digit * 2)
    return total % 10 == 0


def test_the_ledger_stores_no_secret_and_no_card_number(make_app):
    """Every fixture event fails; nothing stored holds a secret, a signature or a card number."""
    app = make_app(PROVIDER_API_KEY="sk_test_do_not_store_me", PROPAGATE_EXCEPTIONS=False)
    client = app.test_client()
    events = [json.loads(path.read_text()) for path in sorted(FIXTURES.glob("*.json")) if path.name[0].isdigit()]
    customers = {objects.customer_id_of(event["data"]["object"]) for event in events} - {None}
    with app.app_context():
        db.session.add_all(User(email=f"{c}@example.com", password_hash="x", provider_id=c) for c in customers)
        db.session.commit()
    signatures = []
    with webhook_handled.connected_to(broken_listener), time_machine.travel(T1, tick=False):
        for event in events:
            response = deliver(client, event, timestamp=int(time.time()))
            signatures.append(response.request.headers["Stripe-Signature"].split("v1=")[1])
    stored = records(app)
    assert {r.id for r in stored} == {e["id"] for e in events if objects.customer_id_of(e["data"]["object"])}
    for record in stored:
        text = " ".join(str(getattr(record, column.name)) for column in FailedWebhookEvent.__table__.columns)
        for secret in (WEBHOOK_SECRET, "sk_test_do_not_store_me", BASE_CONFIG["PROVIDER_API_KEY"], *signatures):
            assert secret not in text
        assert not re.search(r'"cvc"\s*:', record.payload)
        assert not [run for run in re.findall(r"(?<!\w)\d{13,19}(?!\w)", text) if _luhn_valid(run)]


def test_prune_deletes_resolved_records_past_the_retention_only(make_app):
    app = make_app(FAILED_EVENT_RETENTION_DAYS="10")
    now = T1
    ages = {"evt_old_resolved": 11, "evt_recent_resolved": 9, "evt_old_open": None}
    with app.app_context():
        for event_id, days in ages.items():
            failed_at = now - timedelta(days=40)
            db.session.add(FailedWebhookEvent(
                id=event_id, type="customer.updated", payload="{}", error_class="E", error_message="m",
                attempts=1, first_failed_at=failed_at, last_failed_at=failed_at,
                resolved_at=None if days is None else now - timedelta(days=days)))
        db.session.commit()
    with time_machine.travel(now, tick=False):
        result = app.test_cli_runner().invoke(args=["prune-webhook-events"])
    assert result.exit_code == 0 and result.output.strip() == "pruned 1 resolved failed event(s)"
    assert [r.id for r in records(app)] == ["evt_old_open", "evt_recent_resolved"]


@pytest.mark.parametrize("mode, livemode, processed", [
    ("any", False, True), ("any", True, True),
    ("test", False, True), ("test", True, False), ("test", None, False),
    ("live", True, True), ("live", False, False),
])
def test_provider_livemode_acknowledges_events_of_the_other_mode_and_stores_nothing(
        make_app, mode, livemode, processed, configure):
    app = make_app(PROVIDER_LIVEMODE=mode)
    configure(PROPAGATE_EXCEPTIONS=False)
    with app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER))
        db.session.commit()
    event = load_event("02", livemode=livemode)
    if livemode is None:
        del event["livemode"]
    client = app.test_client()
    # A listener that fails shows whether the event was processed at all: an ignored one never reaches it.
    response = post_failing(client, event)
    assert response.status_code == (500 if processed else 200)
    assert len(records(app)) == (1 if processed else 0)
    if not processed:
        assert response.json == {"received": True}
        assert snapshot(app) == {"ledger": [], "subscriptions": [], "notifications": [], "plans": [None]}
    assert post(client, event).status_code == 200
    assert snapshot(app)["plans"] == (["pro"] if processed else [None])


@pytest.mark.parametrize("api_key, mode", [("sk_live_abc", "live"), ("rk_live_abc", "live"), ("sk_test_abc", "test"),
                                           ("", "test")])
def test_provider_livemode_follows_the_api_key_by_default(make_app, api_key, mode):
    """Issue 25 item 9: a test deployment never processes live events unless told to."""
    assert make_app(PROVIDER_API_KEY=api_key, PROVIDER_LIVEMODE="").config["PROVIDER_LIVEMODE"] == mode


def test_an_update_naming_another_users_subscription_is_acknowledged_and_changes_nothing(app, caplog):
    """Issue 25 item 8: it was an IntegrityError (a 500 Stripe retries for three days)."""
    with app.app_context():
        db.session.add_all([User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER),
                            User(email="other@example.com", password_hash="x", provider_id="cus_other")])
        db.session.commit()
    client = app.test_client()
    assert post(client, load_event("02")).status_code == 200
    before = snapshot(app)
    foreign = load_event("03", id="evt_foreign")
    foreign["data"]["object"]["customer"] = "cus_other"
    response = post(client, foreign)
    assert response.status_code == 200 and response.json == {"received": True}
    after = snapshot(app)
    assert after["subscriptions"] == before["subscriptions"]
    assert sorted(after["plans"], key=str) == sorted(before["plans"], key=str)  # PostgreSQL returns rows in any order
    assert "belongs to another user" in caplog.text
