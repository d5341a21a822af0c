"""Shared fixtures: ``app``, ``client``, ``runner`` on a migrated database.

The database is SQLite in a temporary folder, or the PostgreSQL database named by
``TEST_DATABASE_URL`` (CI sets one up and throws it away). The schema is built once per session by
the real migrations; every test then starts from empty tables. Under pytest-xdist (``make test``
runs ``-n auto``) each worker has a database of its own.
"""
import copy
import json
import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
import stripe
from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import create_engine, make_url, select, text
from werkzeug.serving import WSGIRequestHandler, make_server

from app import configure, create_app
from app.auth import tokens
from app.billing.events import REQUIRED_EVENT_TYPES
from app.extensions import db, limiter
from app.models import User
from app.observability.logs import register_logging
from scripts.stripe_emulator.testing import RunningEmulator
from tests.depth import DEEP
from tests.receivers import HttpReceiver, SmtpSink
from tests.redis_server import RedisServer, require_redis_server
from tests.signing import WEBHOOK_SECRET, sign

MIGRATIONS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
PASSWORD = "correct horse battery"

BASE_CONFIG = {
    "TESTING": True,
    "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
    # Argon2id with small costs keeps the suite fast; production defaults are in app.config.
    "PASSWORD_HASH_TIME_COST": 1,
    "PASSWORD_HASH_MEMORY_COST": 1024,
    # The fixture events' price, and the emulator prices tests create, map to plans.
    "PROVIDER_PLANS": {"price_000000000000000000000000": "pro", "gold21323": "gold"},
    "PROVIDER_API_KEY": "sk_test_emulator",
    "PROVIDER_MAX_NETWORK_RETRIES": 0,
    # The suite opens many accounts and calls Stripe often from one address; the tests of these
    # limits set their own.
    "AUTH_REGISTER_RATE_LIMIT": "100000 per minute",
    "PROVIDER_CALLS_RATE_LIMIT": "100000 per minute",
    # Signs the tokens of the account emails (required under gunicorn, see app.config.require_serving).
    "SECRET_KEY": "test secret key of the account email tokens",
}
FIXTURES = Path(__file__).parent / "fixtures" / "stripe_events"


def pytest_report_header(config):
    return None if DEEP else "deep_only tests: deselected, make test-deep (TEST_DEEP=1) runs them"


def pytest_collection_modifyitems(config, items):
    """Leave the ``deep_only`` tests to ``make test-deep`` (``TEST_DEEP=1``, which CI runs): under ``make
    test`` they are deselected (the report's header says so, and without xdist its summary counts
    them), never skipped."""
    if DEEP:
        return
    deep_only = [item for item in items if item.get_closest_marker("deep_only")]
    if deep_only:
        config.hook.pytest_deselected(items=deep_only)
        items[:] = [item for item in items if not item.get_closest_marker("deep_only")]


def _reset_schema(url):
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def _on_server(url, *statements):
    engine = create_engine(url, isolation_level="AUTOCOMMIT")  # CREATE and DROP DATABASE refuse a transaction
    with engine.connect() as conn:
        for statement in statements:
            conn.execute(text(statement))
    engine.dispose()


@contextmanager
def _worker_database(url, worker):
    """Yield the URL of ``<database>_<worker>``, a database made beside ``url``'s for one xdist worker, then drop it.

    Workers must not share one: every test empties the tables, and the fault tests end every
    connection of the database.
    """
    name = f"{make_url(url).database}_{worker}"
    _on_server(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        _on_server(url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def _session_database(tmp_path_factory):
    url = os.environ.get("TEST_DATABASE_URL")
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if url and worker:
        with _worker_database(url, worker) as worker_url:
            yield worker_url
        return
    if url:
        _reset_schema(url)
    else:  # each xdist worker has a temporary folder of its own
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    yield url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory):
    with _session_database(tmp_path_factory) as url:
        migrating = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": url})
        with migrating.app_context():
            upgrade(directory=MIGRATIONS)
            db.engine.dispose()
        yield url


@pytest.fixture(scope="session")
def emulator():
    """The Stripe emulator, in this process, for the whole session; reset before each test that uses it."""
    running = RunningEmulator().start()
    yield running
    running.stop()


@pytest.fixture
def stripe_client(emulator):
    """The real stripe SDK pointed at the emulator, for driving the provider side in tests."""
    return stripe.StripeClient("sk_test_emulator", base_addresses={"api": emulator.url}, max_network_retries=0)


@pytest.fixture
def prices(stripe_client):
    """Two recurring prices at the emulator, also mapped in ``PROVIDER_PLANS`` by ``make_app``."""
    product = stripe_client.v1.products.create(params={"name": "Service"})
    made = {}
    for plan, amount in (("basic", 900), ("pro", 2900)):
        made[plan] = stripe_client.v1.prices.create(params={
            "product": product.id, "unit_amount": amount, "currency": "usd", "recurring": {"interval": "month"},
            "lookup_key": plan}).id
    return made


# Set per test (the prices' ids and the webhook secret the emulator makes are new in each test), so
# not part of what tells one app from another; a reused app takes the test's own.
_PER_TEST = ("PROVIDER_PLANS", "PROVIDER_WEBHOOK_SECRET")
_APPS = {}  # the worker's apps by their configuration, less _PER_TEST: (app, its extensions when made)


def _app_of(config, taken):
    """An app of ``config``: the worker's app of the same configuration, made new only the first time.

    Making an app costs more than most tests (its routes compiled, its engines and their statement
    caches new), so each worker keeps one per configuration, as a worker of the service keeps its app.
    What a test may have changed is put back first: the configuration (from ``config``, validated
    again), the caches of ``app.extensions``, the rate limiter's counts and the log format. A test
    that asks twice for one configuration gets two apps (two workers of the service).
    """
    key = json.dumps({name: value for name, value in config.items() if name not in _PER_TEST},
                     sort_keys=True, default=repr)
    app, kept = _APPS.get(key, (None, None))
    if app is None or app in taken:
        app = create_app(config)
        if key not in _APPS:
            _APPS[key] = (app, set(app.extensions))
        return app
    fresh = Flask(app.import_name, instance_relative_config=True)
    configure(fresh, config)
    app.config.clear()
    app.config.update(fresh.config)
    for name in set(app.extensions) - kept:
        del app.extensions[name]
    limiter.init_app(app)
    register_logging(app)
    return app


@pytest.fixture
def make_app(database_url, emulator, request):
    """Return a factory of apps on the test database with extra config; tables are emptied afterwards.

    The provider is the emulator (reset first); prices made by the ``prices`` fixture are mapped.
    An app is the worker's app of that configuration (``_app_of``); ``new=True`` makes one for the
    test alone, which may add routes to it.
    """
    made = []
    emulator.reset()
    price_plans = {}
    if "prices" in request.fixturenames:
        price_plans = {price: plan for plan, price in request.getfixturevalue("prices").items()}

    def factory(new=False, **config):
        plans = {**BASE_CONFIG["PROVIDER_PLANS"], **price_plans, **config.pop("PROVIDER_PLANS", {})}
        config = {**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": database_url, "PROVIDER_API_BASE": emulator.url,
                  "PROVIDER_PLANS": plans, **config}
        app = create_app(config) if new else _app_of(config, taken=made)
        made.append(app)
        return app

    yield factory
    for app in made[:1]:
        with app.app_context():
            db.session.remove()
            with db.engine.begin() as conn:
                for table in reversed(db.metadata.sorted_tables):
                    conn.execute(table.delete())
    for app in made:
        with app.app_context():
            for engine in db.engines.values():  # the autocommit engine of reads has a pool too
                engine.dispose()


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


def register(client, email="ada@example.com", password=PASSWORD, name="Ada"):
    response = client.post("/auth/register", json={"email": email, "password": password, "name": name})
    assert response.status_code == 201, response.json
    return response.json


def login(client, email="ada@example.com", password=PASSWORD, **extra):
    response = client.post("/auth/login", json={"email": email, "password": password, **extra})
    assert response.status_code == 200, response.json
    return response.json


def bearer(token_body):
    return {"Authorization": f"Bearer {token_body['access_token']}"}


@pytest.fixture
def fuzzed_app(make_app, prices):
    """An app for schemathesis to call: prices mapped, and a user ``fuzz@example.com`` (see ``fresh_token``)."""
    # The limiter would answer 429 to most generated logins; 429 is covered in test_security.
    app = make_app(AUTH_LOGIN_RATE_LIMIT="100000 per minute", AUTH_PASSWORD_RESET_RATE_LIMIT="100000 per minute")
    register(app.test_client(), email="fuzz@example.com")
    return app


def fresh_token(app):
    """Issue a token to ``fuzzed_app``'s user directly (a generated logout or refresh may delete the last one)."""
    with app.app_context():
        user = db.session.scalars(select(User).where(User.email == "fuzz@example.com")).one()
        _, plain_text = tokens.issue(user)
        db.session.commit()
    return plain_text


@pytest.fixture
def user(client):
    return register(client)


@pytest.fixture
def auth_headers(client, user):
    return bearer(login(client))


def load_event(name, **changes):
    """Return a deep copy of the fixture event whose file name starts with ``name``, top-level keys changed."""
    (path,) = FIXTURES.glob(f"{name}*.json")
    event = copy.deepcopy(json.loads(path.read_text()))
    event.update(changes)
    return event


def deliver(client, event, **sign_options):
    """POST ``event`` (a dict) to the webhook endpoint, signed; return the response."""
    payload = json.dumps(event).encode()
    return client.post("/provider/webhook", data=payload, content_type="application/json",
                       headers={"Stripe-Signature": sign(payload, **sign_options)})


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


@pytest.fixture
def live_config():
    """Extra config of the ``live`` app; a test module overrides this fixture to set its own."""
    return {}


@pytest.fixture
def live(make_app, stripe_client, live_config):
    """The service over real HTTP, registered at the emulator as its webhook endpoint.

    Yields ``(app, base_url)``. The app's webhook secret is the one the emulator issued.
    """
    holder = {}
    server = make_server("127.0.0.1", 0, lambda environ, start: holder["app"](environ, start), threaded=True,
                         request_handler=_QuietHandler)
    base_url = f"http://127.0.0.1:{server.server_port}"
    endpoint = stripe_client.v1.webhook_endpoints.create(
        params={"url": f"{base_url}/provider/webhook", "enabled_events": list(REQUIRED_EVENT_TYPES)})
    holder["app"] = make_app(PROVIDER_WEBHOOK_SECRET=endpoint.secret, **live_config)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield holder["app"], base_url
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def provider_customer(app, stripe_client):
    """A customer at the provider (the emulator) and the user it belongs to, no card yet; return its id.

    Events naming it reach the row writer and the listeners, which look the customer up at the provider.
    """
    customer_id = stripe_client.v1.customers.create(params={"email": "pay@example.com"}).id
    with app.app_context():
        db.session.add(User(email="pay@example.com", password_hash="x", provider_id=customer_id))
        db.session.commit()
    return customer_id


@contextmanager
def holding_lock(database_url, postgres_statement):
    """Hold a lock from a second connection until the block ends: on PostgreSQL what
    ``postgres_statement`` takes, on SQLite the database-wide write lock."""
    if database_url.startswith("postgresql"):
        engine = create_engine(database_url)
        holder = engine.connect()
        holder.execute(text(postgres_statement))
    else:
        engine = None
        holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.rollback()
        holder.close()
        if engine is not None:
            engine.dispose()


@pytest.fixture
def smtp_server():
    """A real SMTP server (aiosmtpd) on 127.0.0.1 that keeps what it accepts (``tests.receivers.SmtpSink``)."""
    sink = SmtpSink().start()
    yield sink
    sink.stop()


@pytest.fixture
def http_receiver():
    """A real HTTP server on 127.0.0.1 that keeps every request (``tests.receivers.HttpReceiver``)."""
    receiver = HttpReceiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def redis_service():
    """The suite's own ``redis-server`` on a free port, for the session; skipped, saying why, without one."""
    require_redis_server()
    with RedisServer() as server:
        yield server


@pytest.fixture
def redis_url(redis_service):
    """URL of the suite's own Redis, emptied first (a store for the login rate limit, as in production)."""
    redis_service.client().flushdb()
    return redis_service.url
