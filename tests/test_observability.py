"""``GET /metrics`` (Prometheus text), the per-request log record and ``LOG_FORMAT=json`` (issue 11)."""
import json

import pytest
import time_machine
from prometheus_client.parser import text_string_to_metric_families

from app import create_app
from app.extensions import db
from app.models import FailedWebhookEvent, User
from app.timeutil import utcnow
from tests.receivers import NOTIFY_SECRET
from tests.support.accounts import bearer, login, register
from tests.support.config import BASE_CONFIG
from tests.support.events import CUSTOMER, DURING_PERIOD, deliver, load_event
from tests.support.notifications import add_notifications

METRICS_TOKEN = "metrics-scrape-token-0123456789"


def scrape(client, token=None):
    """Return ``{(name, frozenset(labels)): value}`` of one scrape (values are process-wide: compare deltas)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.data
    assert response.content_type.startswith("text/plain")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.get_data(as_text=True))
            for sample in family.samples}


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0)


@pytest.fixture
def metrics_app(make_app):
    return make_app(METRICS_ENABLED="true")


def test_metrics_are_off_unless_enabled(client):
    response = client.get("/metrics")
    assert response.status_code == 404 and response.json["error"]["code"] == "not_found"


def test_metrics_count_requests_by_route_template_and_status(metrics_app):
    client = metrics_app.test_client()
    before = scrape(client)
    for _ in range(3):
        assert client.get("/health").status_code == 200
    client.get("/auth/me")  # 401, no token
    client.get("/no/such/path")
    after = scrape(client)
    requests_total = "http_requests_total"
    assert value(after, requests_total, method="GET", endpoint="/health", status="200") - \
        value(before, requests_total, method="GET", endpoint="/health", status="200") == 3
    assert value(after, requests_total, method="GET", endpoint="/auth/me", status="401") - \
        value(before, requests_total, method="GET", endpoint="/auth/me", status="401") == 1
    assert value(after, requests_total, method="GET", endpoint="<unmatched>", status="404") - \
        value(before, requests_total, method="GET", endpoint="<unmatched>", status="404") == 1
    histogram_count = "http_request_duration_seconds_count"
    assert value(after, histogram_count, method="GET", endpoint="/health") - \
        value(before, histogram_count, method="GET", endpoint="/health") == 3


def test_metrics_token_is_required_as_a_bearer_token_when_set(make_app):
    client = make_app(METRICS_ENABLED="1", METRICS_TOKEN=METRICS_TOKEN).test_client()
    missing = client.get("/metrics")
    assert missing.status_code == 401 and missing.json["error"]["code"] == "unauthenticated"
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    for wrong in (f"Bearer {METRICS_TOKEN}x", f"Basic {METRICS_TOKEN}", "Bearer "):
        assert client.get("/metrics", headers={"Authorization": wrong}).status_code == 401
    assert "http_requests_total" in {name for name, _ in scrape(client, METRICS_TOKEN)}


def test_webhook_deliveries_are_counted_by_type_and_outcome(metrics_app):
    client = metrics_app.test_client()
    with metrics_app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER))
        db.session.commit()
    created, older_update = load_event("02"), load_event("03")
    unknown = load_event("02", id="evt_unknown_customer")
    unknown["data"]["object"]["customer"] = "cus_nobody"
    deliveries = "webhook_deliveries_total"
    before = scrape(client)
    with time_machine.travel(DURING_PERIOD, tick=True):
        statuses = [deliver(client, created).status_code, deliver(client, created).status_code,
                    deliver(client, older_update).status_code, deliver(client, unknown).status_code,
                    deliver(client, created, secret="whsec_wrong").status_code]
    assert statuses == [200, 200, 200, 200, 400]
    after = scrape(client)
    expected = {("customer.subscription.created", "processed"): 1, ("customer.subscription.created", "duplicate"): 1,
                ("customer.subscription.updated", "stale"): 1, ("customer.subscription.created", "ignored"): 1,
                ("unknown", "rejected"): 1}
    for (event_type, outcome), count in expected.items():
        assert value(after, deliveries, event_type=event_type, outcome=outcome) - \
            value(before, deliveries, event_type=event_type, outcome=outcome) == count, (event_type, outcome)


def test_a_failed_webhook_is_counted_as_failed(metrics_app, configure):
    client = metrics_app.test_client()
    configure(PROPAGATE_EXCEPTIONS=False)
    with metrics_app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER))
        db.session.commit()
    event = load_event("14")  # customer.updated: the listener reads the customer, unknown to the emulator
    before = scrape(client)
    with time_machine.travel(DURING_PERIOD, tick=True):
        assert deliver(client, event).status_code >= 500
    after = scrape(client)
    labels = {"event_type": "customer.updated", "outcome": "failed"}
    assert value(after, "webhook_deliveries_total", **labels) - value(before, "webhook_deliveries_total", **labels) == 1


def test_login_rate_limit_refusals_are_counted(make_app):
    client = make_app(METRICS_ENABLED="1", AUTH_LOGIN_RATE_LIMIT="2 per minute").test_client()
    before = value(scrape(client), "login_rate_limited_total")
    statuses = [client.post("/auth/login", json={"email": "x@example.com", "password": "guess"}).status_code
                for _ in range(4)]
    assert statuses == [401, 401, 429, 429]
    assert value(scrape(client), "login_rate_limited_total") - before == 2


def test_notifications_are_counted_queued_sent_and_dead(make_app, smtp_server, http_receiver):
    app = make_app(METRICS_ENABLED="1", MAIL_SERVER="127.0.0.1", MAIL_PORT=smtp_server.port,
                   NOTIFY_WEBHOOK_URL=http_receiver.url, NOTIFY_WEBHOOK_SECRET=NOTIFY_SECRET, NOTIFY_MAX_ATTEMPTS=1)
    client = app.test_client()
    before = scrape(client)
    http_receiver.status = 503
    add_notifications(app, ["subscription_ended", "payment_failed"])
    assert "delivered 2, failed 0 (retry scheduled), dead 2" in \
        app.test_cli_runner().invoke(args=["deliver-notifications", "--once"]).output
    after = scrape(client)
    for channel, state, count in (("email", "queued", 2), ("webhook", "queued", 2), ("email", "sent", 2),
                                  ("webhook", "dead", 2), ("webhook", "sent", 0)):
        assert value(after, "notifications_total", channel=channel, state=state) - \
            value(before, "notifications_total", channel=channel, state=state) == count, (channel, state)


def json_lines(text):
    """Parse the lines of ``text`` that our handler wrote (in this test process alembic's ``fileConfig``
    has also left a root handler on stderr); fail on one that is not a JSON object."""
    records = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    assert records and all(isinstance(record, dict) for record in records)
    return records


def test_json_log_has_one_object_per_line_with_the_request_fields(make_app, capsys):
    app = make_app(LOG_FORMAT="json")
    client = app.test_client()
    user = register(client)
    token = login(client)
    capsys.readouterr()
    response = client.get("/auth/me", headers={**bearer(token), "X-Request-ID": "req-observability-1"})
    assert response.status_code == 200
    (record,) = [r for r in json_lines(capsys.readouterr().err) if r["logger"] == "app.request"]
    assert record["request_id"] == "req-observability-1"
    assert {"time", "level", "logger", "message", "pid"} <= set(record)
    assert record["time"].endswith("+00:00") and record["level"] == "INFO"
    assert (record["method"], record["path"], record["status"], record["user_id"]) == ("GET", "/auth/me", 200,
                                                                                       user["id"])
    assert isinstance(record["duration_ms"], float) and record["duration_ms"] >= 0


def test_json_log_of_a_webhook_names_the_event(make_app, capsys):
    app = make_app(LOG_FORMAT="json")
    client = app.test_client()
    with app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER))
        db.session.commit()
    event = load_event("02")
    capsys.readouterr()
    with time_machine.travel(DURING_PERIOD, tick=True):
        assert deliver(client, event).status_code == 200
    (record,) = [r for r in json_lines(capsys.readouterr().err) if r["logger"] == "app.request"]
    assert (record["path"], record["event_id"], record["event_type"], record["webhook_outcome"]) == (
        "/provider/webhook", event["id"], event["type"], "processed")


def test_text_log_stays_the_default(client, capsys):
    client.get("/health")
    line = [line for line in capsys.readouterr().err.splitlines() if "app.request" in line][-1]
    assert " INFO [" in line and "app.request: GET /health 200" in line
    with pytest.raises(json.JSONDecodeError):
        json.loads(line)


def _add_failure(app, event_id, resolved=False):
    with app.app_context():
        db.session.add(FailedWebhookEvent(
            id=event_id, type="invoice.paid", payload="{}", error_class="ProviderUnavailable", error_message="down",
            resolved_at=utcnow() if resolved else None))
        db.session.commit()


def test_the_open_failed_events_gauge_is_read_at_each_scrape(metrics_app):
    """A redelivery resolves its record in the webhook's transaction, which leaves the gauge alone:
    the scrape reads the count, so it never shows a failure that is already resolved."""
    client = metrics_app.test_client()
    _add_failure(metrics_app, "evt_open_1")
    _add_failure(metrics_app, "evt_open_2")
    _add_failure(metrics_app, "evt_done", resolved=True)
    assert value(scrape(client), "webhook_failed_events_open") == 2
    with metrics_app.app_context():
        db.session.get(FailedWebhookEvent, "evt_open_1").resolved_at = utcnow()
        db.session.commit()
    assert value(scrape(client), "webhook_failed_events_open") == 1


def test_metrics_answer_with_the_database_down(metrics_app, tmp_path, caplog):
    client = metrics_app.test_client()
    _add_failure(metrics_app, "evt_open")
    assert value(scrape(client), "webhook_failed_events_open") == 1
    down = create_app({**BASE_CONFIG, "METRICS_ENABLED": "1",
                       "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path / 'missing' / 'nothing.db'}"})
    samples = scrape(down.test_client())
    assert value(samples, "webhook_failed_events_open") == 1  # its last value, process-wide
    assert any("did not answer" in record.getMessage() for record in caplog.records)
