"""Faults: the database or the provider fails mid-request, or the process dies (CONTRACT "Webhook processing").

A webhook that fails answers 5xx with nothing of it stored, and the provider's redelivery completes
it; a user-facing call with the provider down or slow answers 503 ``provider_unavailable`` within a
bounded time and leaves local state as it was.
"""
import json
import threading
import time

import pytest
import requests
from sqlalchemy import create_engine, func, select, text

from app.extensions import db
from app.models import Notification, Subscription, User, WebhookEvent
from app.signals import webhook_handled
from tests.ports import free_port
from tests.support.accounts import bearer, login, register
from tests.support.databases import holding_lock, one_second_lock_wait
from tests.support.events import deliver
from tests.support.reliability import activating_update, post_event, start_paid_subscriptions

# The SDK's own backoff between two attempts is at most a second here; the rest is slack for a
# loaded 2-core machine.
BACKOFF_AND_SLACK_SECONDS = 2.5


def snapshot(app):
    with app.app_context():
        db.session.expire_all()
        return {
            "ledger": db.session.scalar(select(func.count()).select_from(WebhookEvent)),
            "subscriptions": db.session.scalars(select(Subscription.provider_status)).all(),
            "notifications": db.session.scalars(select(Notification.kind)).all(),
            "users": db.session.execute(select(User.plan, User.pm_type, User.pm_last_four)).tuples().all(),
        }


NOTHING = {"ledger": 0, "subscriptions": [], "notifications": [], "users": [(None, None, None)]}
PAID = {"ledger": 1, "subscriptions": ["active"], "notifications": ["subscribed"], "users": [("basic", "visa", "4242")]}


@pytest.fixture
def paid_event(app, emulator, stripe_client, prices):
    """The activating ``customer.subscription.updated`` of one user's freshly paid subscription, undelivered."""
    subscriptions, events = start_paid_subscriptions(emulator, stripe_client, prices, app, 1)
    (subscription_id,) = subscriptions.values()
    return activating_update(events, subscription_id)


def cut_connection(url):
    """Return a ``webhook_handled`` receiver that drops the request's database connection once.

    PostgreSQL: ``pg_terminate_backend`` from another connection, as when the server restarts or a
    network partition ends the session. SQLite has no server: the file connection is closed
    under the request, the nearest thing to losing the database mid-transaction.
    """
    done = []

    def receiver(sender, event, **extra):
        if done:
            return
        done.append(True)
        if url.startswith("postgresql"):
            pid = db.session.execute(text("SELECT pg_backend_pid()")).scalar()
            killer = create_engine(url)
            with killer.connect() as conn:
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            killer.dispose()
        else:
            db.session.connection().connection.driver_connection.close()

    return receiver


def test_database_lost_mid_webhook_answers_5xx_leaves_nothing_and_the_redelivery_succeeds(
        app, paid_event, database_url, tally, configure):
    configure(PROPAGATE_EXCEPTIONS=False)
    client = app.test_client()
    with webhook_handled.connected_to(cut_connection(database_url)):
        response = deliver(client, paid_event)
    tally["faults_injected"] += 1
    # The lost connection is a 503 to retry: SQLAlchemy has discarded the pool's older connections.
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert snapshot(app) == NOTHING
    assert deliver(client, paid_event).status_code == 200
    tally["webhook_deliveries"] += 2
    assert snapshot(app) == PAID


def end_pooled_connections(app, url):
    """End every connection the app's pool holds, as a database restart does between two requests.

    PostgreSQL: ``pg_terminate_backend`` of every other session of the database (the server sends
    its FATAL error and closes each socket). SQLite has no server: the pooled file connections
    are closed under the pool. Returns how many connections were ended.
    """
    if url.startswith("postgresql"):
        killer = create_engine(url)
        with killer.connect() as conn:
            ended = conn.scalar(text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"))
        killer.dispose()
        time.sleep(0.2)  # the backends' exit reaches the client sockets
        return ended
    with app.app_context():
        pooled = [db.engine.raw_connection() for _ in range(db.engine.pool.checkedin())]
    for connection in pooled:
        connection.driver_connection.close()
        connection.close()
    return len(pooled)


def test_database_restart_between_requests_costs_no_request(app, database_url, tally, configure):
    """No pre-ping round trip (``app.db_pool``), and still every request after a restart succeeds.

    PostgreSQL: the connections the server ended are found at checkout, without a round trip,
    and replaced. SQLite has no server: file connections closed under the pool are found when the
    pool resets them and are discarded.
    """
    configure(PROPAGATE_EXCEPTIONS=False)
    client = app.test_client()
    register(client)
    headers = bearer(login(client))
    assert client.get("/auth/me", headers=headers).status_code == 200
    assert end_pooled_connections(app, database_url) >= 1
    tally["faults_injected"] += 1
    assert client.get("/auth/me", headers=headers).status_code == 200
    assert client.get("/subscription", headers=headers).status_code == 200
    assert client.post("/auth/logout", headers=headers).status_code == 204


def test_database_lost_mid_webhook_is_listed_as_failed_and_its_replay_equals_an_undisturbed_delivery(
        app, paid_event, database_url, tally, configure):
    """Issue 11: the failed-event ledger outlives the rollback, and a replay completes the event."""
    configure(PROPAGATE_EXCEPTIONS=False)
    runner = app.test_cli_runner()
    with webhook_handled.connected_to(cut_connection(database_url)):
        assert deliver(app.test_client(), paid_event).status_code >= 500
    tally["faults_injected"] += 1
    tally["webhook_deliveries"] += 1
    assert snapshot(app) == NOTHING

    listed = runner.invoke(args=["webhook-events", "--failed", "--json"])
    assert listed.exit_code == 0, listed.output
    (failed,) = json.loads(listed.output)
    assert (failed["id"], failed["type"], failed["attempts"]) == (paid_event["id"], paid_event["type"], 1)
    assert failed["customer"] == paid_event["data"]["object"]["customer"] and failed["resolved_at"] is None
    # The exception's first line only: SQLAlchemy's next lines hold the statement and its parameters.
    assert failed["error_class"] in {"OperationalError", "ProgrammingError"} and "[SQL" not in failed["error_message"]

    replayed = runner.invoke(args=["webhook-replay", paid_event["id"]])
    assert replayed.exit_code == 0 and replayed.output.strip() == f"{paid_event['id']}: processed"
    assert snapshot(app) == PAID
    assert json.loads(runner.invoke(args=["webhook-events", "--failed", "--json"]).output) == []
    assert runner.invoke(args=["webhook-replay", paid_event["id"]]).output.strip() == f"{paid_event['id']}: duplicate"
    assert deliver(app.test_client(), paid_event).status_code == 200
    tally["webhook_deliveries"] += 1
    assert snapshot(app) == PAID


def test_database_locked_by_another_writer_answers_5xx_and_the_redelivery_succeeds(
        make_app, paid_event, database_url, tally):
    """SQLite: another connection holds ``BEGIN EXCLUSIVE`` past a 1 s ``busy_timeout``.

    PostgreSQL: another transaction holds the ledger table locked and the service's sessions run
    with a 1 s ``lock_timeout`` (an operator's setting; the default waits for the lock).
    """
    app = make_app(SQLALCHEMY_ENGINE_OPTIONS={"pool_pre_ping": True, **one_second_lock_wait(database_url)},
                   PROPAGATE_EXCEPTIONS=False)
    client = app.test_client()
    with holding_lock(database_url, "LOCK TABLE webhook_events IN ACCESS EXCLUSIVE MODE"):
        response = deliver(client, paid_event)
    tally["faults_injected"] += 1
    assert response.status_code >= 500
    assert snapshot(app) == NOTHING
    assert deliver(client, paid_event).status_code == 200
    tally["webhook_deliveries"] += 2
    assert snapshot(app) == PAID


@pytest.mark.parametrize("method, after", [(None, False), ("POST", True)], ids=["refused", "done-answer-lost"])
def test_provider_failing_while_the_card_is_promoted_answers_5xx_and_the_redelivery_completes_it(
        app, paid_event, emulator, stripe_client, method, after, tally):
    # The promotion is the customer's read and its update, whose answer carries the card. Refused, or
    # done at Stripe with every answer lost: the redelivery reads the card promoted already.
    client = app.test_client()
    paid = paid_event["data"]["object"]

    def customer_default():
        return stripe_client.v1.customers.retrieve(paid["customer"]).invoice_settings.default_payment_method

    emulator.add_fault("/v1/customers", status=500, count=10, after=after, method=method)
    response = deliver(client, paid_event)
    emulator.clear_faults()
    assert customer_default() == (paid["default_payment_method"] if after else None)
    tally["faults_injected"] += 1
    assert response.status_code == 503 and response.json["error"]["code"] == "provider_unavailable"
    assert snapshot(app) == NOTHING
    assert deliver(client, paid_event).status_code == 200
    tally["webhook_deliveries"] += 2
    assert snapshot(app) == PAID
    assert customer_default() == paid["default_payment_method"]


def test_a_worker_killed_between_the_row_and_the_listeners_leaves_nothing_and_the_redelivery_converges(
        gunicorn, app, emulator, stripe_client, prices, tally):
    subscriptions, events = start_paid_subscriptions(emulator, stripe_client, prices, app, 1)
    event = activating_update(events, next(iter(subscriptions.values())))
    # The row is written, then CommitPaymentMethod waits on the provider: the worker dies there.
    emulator.add_fault("/v1/customers", status=None, count=1, delay_seconds=3)
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(r=_attempt(gunicorn.url, event)))
    thread.start()
    time.sleep(1.0)
    assert gunicorn.kill_workers()
    thread.join(30)
    tally["faults_injected"] += 1
    assert outcome["r"] is None or outcome["r"].status_code >= 500
    gunicorn.wait_healthy()
    emulator.clear_faults()
    assert snapshot(app) == NOTHING
    assert post_event(gunicorn.url, event).status_code == 200
    tally["webhook_deliveries"] += 2
    assert snapshot(app) == PAID


def _attempt(url, event):
    try:
        return post_event(url, event)
    except requests.ConnectionError:
        return None


# What the 503 says happened: a provider that fails slower than PROVIDER_TIMEOUT has not answered in time.
SAID = {"slow": "did not answer in time", "down": "did not answer in time", "unreachable": "could not be reached"}


@pytest.mark.parametrize("fault", ["slow", "down", "unreachable"])
def test_provider_down_or_slow_during_intent_and_sync_answers_503_in_bounded_time(
        make_app, emulator, prices, fault, tally):
    timeout, retries = 1, 1
    config = {"PROVIDER_TIMEOUT": timeout, "PROVIDER_MAX_NETWORK_RETRIES": retries}
    app = make_app(**config)
    client = app.test_client()
    register(client)
    headers = bearer(login(client))
    # A first, successful intent leaves a local incomplete subscription, so the next one syncs.
    first = client.post("/subscription/intent", json={"price": prices["basic"]}, headers=headers)
    assert first.status_code == 201
    before = snapshot(app)
    with app.app_context():
        provider_id = db.session.scalars(select(User.provider_id)).one()

    if fault == "unreachable":
        with socket_closed_port() as port:
            broken = make_app(**config, PROVIDER_API_BASE=f"http://127.0.0.1:{port}")
        client, runner = broken.test_client(), broken.test_cli_runner()
    else:
        emulator.add_fault("/v1/", status=500 if fault == "down" else None, count=100, delay_seconds=2.5)
        runner = app.test_cli_runner()
    bound = (retries + 1) * timeout + BACKOFF_AND_SLACK_SECONDS + (2.5 if fault == "down" else 0)

    for price in (prices["basic"], prices["pro"]):  # reuse (sync, then retrieve) and replace (sync, cancel)
        started = time.monotonic()
        response = client.post("/subscription/intent", json={"price": price}, headers=headers)
        elapsed = time.monotonic() - started
        tally["faults_injected"] += 1
        tally["provider_fault_max_ms"] = max(tally["provider_fault_max_ms"], round(elapsed * 1000))
        assert response.status_code == 503 and response.json["error"]["code"] == "provider_unavailable"
        assert SAID[fault] in response.json["error"]["message"]
        assert elapsed < bound, f"{fault}: {elapsed:.1f} s"

    started = time.monotonic()
    result = runner.invoke(args=["sync-user", "--all"])
    elapsed = time.monotonic() - started
    tally["faults_injected"] += 1
    assert result.exit_code != 0 and "FAILED (ProviderUnavailable" in result.output
    assert elapsed < bound
    emulator.clear_faults()
    assert snapshot(app) == before
    with app.app_context():
        assert db.session.scalars(select(User.provider_id)).one() == provider_id
    time.sleep(0.5 if fault == "slow" else 0)  # let delayed provider requests finish before the reset


class socket_closed_port:
    """A port on which nothing listens (bound, then closed)."""

    def __enter__(self):
        return free_port()

    def __exit__(self, *exc):
        return False
