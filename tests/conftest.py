"""Shared fixtures: ``app``, ``client``, ``runner`` on a migrated database.

The database is SQLite in a temporary folder, or the PostgreSQL database named by
``TEST_DATABASE_URL`` (CI sets one up and throws it away). The schema is built once per session by
the real migrations; every test then starts from empty tables. Under pytest-xdist (``make test``
runs ``-n auto``) each worker has a database of its own.
"""
import gc
import json
import os
import shutil
import threading
from contextlib import contextmanager

import pytest
import stripe
from flask import Flask
from flask_migrate import upgrade
from sqlalchemy import create_engine, make_url, text
from werkzeug.serving import WSGIRequestHandler, make_server

from app import configure as configure_app
from app import create_app
from app.billing.events import REQUIRED_EVENT_TYPES
from app.extensions import db, limiter
from app.models import User
from app.observability.logs import register_logging
from app.schema import bind as bind_migrations
from scripts.stripe_emulator.testing import RunningEmulator
from tests.depth import DEEP
from tests.receivers import HttpReceiver, SmtpSink
from tests.redis_server import RedisServer, require_redis_server
from tests.support.accounts import bearer, login, register
from tests.support.billing import start_flow
from tests.support.config import BASE_CONFIG
from tests.support.databases import MIGRATIONS


def pytest_report_header(config):
    return None if DEEP else "deep_only tests: deselected, make test-deep (TEST_DEEP=1) runs them"


def pytest_collection_finish(session):
    """Leave what collection loaded (the app, the SDK, every test module) out of the garbage collector's
    passes, and run its youngest pass less often: measured on five billing test modules, the collector
    took 18% of their CPU time, 10% after this. The service's own workers freeze likewise
    (``gunicorn.conf.py``'s ``post_worker_init``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 100, 1000)


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
        _migrate(url)
        yield url


def _migrate(url):
    migrating = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": url})
    with bind_migrations(migrating).app_context():
        upgrade(directory=MIGRATIONS)
        db.engine.dispose()


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("template") / "app.db"
    _migrate(f"sqlite:///{path}")
    return path


@pytest.fixture
def migrated_sqlite(tmp_path, _sqlite_template):
    """``tmp_path / "app.db"``, the SQLite file of ``tests.support.processes.environ``, migrated to the newest revision.

    A copy of a file the worker migrated once: for a test of a process that needs the schema but is not about
    migrating, where running ``flask db upgrade`` first cost a process start and Alembic's (about 2.5 s of CPU).
    """
    path = tmp_path / "app.db"
    shutil.copyfile(_sqlite_template, path)
    return path


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
    configure_app(fresh, config)
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
    test alone, which may add routes to it. ``factory.made`` lists the apps made so far, in order.
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

    factory.made = made
    yield factory
    for app in made[:1]:
        with app.app_context():
            db.session.remove()
            with db.engine.begin() as conn:  # the driver's own cursor: a third of the CPU of SQLAlchemy's deletes
                cursor = conn.connection.driver_connection.cursor()
                for table in reversed(db.metadata.sorted_tables):
                    cursor.execute(f'DELETE FROM "{table.name}"')
                cursor.close()
    kept = {id(app) for app, _ in _APPS.values()} if database_url.startswith("sqlite") else set()
    for app in made:
        if id(app) in kept:
            # A worker's kept app keeps its connections, as a worker of the service does: closing SQLite's last
            # one checkpoints the write-ahead log, and the next test connects again (measured: 10 ms of CPU and
            # 25 ms a test). PostgreSQL's are closed: the fault tests end every connection of the database.
            continue
        with app.app_context():
            for engine in db.engines.values():  # the autocommit engine of reads has a pool too
                engine.dispose()


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def configure(make_app):
    """Return ``configure(app=None, **values)``, the one way a test changes an app's config once it has one.

    ``values`` are settings by name (``PROVIDER_TRIAL_DAYS=14``), set on ``app`` for the rest of the test;
    ``app`` defaults to the one app the test made (through ``app``, ``live``, ``make_app``...) and must be
    given when it made several. A name the app has no setting of is an error (``KeyError``), so a renamed
    setting cannot leave a test quietly running on the default. A reused app's config is put back by
    ``make_app`` at its next test (``_app_of``). Config a test needs from the start goes to
    ``make_app(...)`` or ``live_config`` instead.
    """
    def set_values(app=None, **values):
        if app is None:
            if len(make_app.made) != 1:
                raise LookupError(f"the test made {len(make_app.made)} apps: say which, configure(app, ...)")
            app = make_app.made[0]
        unknown = sorted(set(values) - set(app.config))
        if unknown:
            raise KeyError(f"no such setting: {', '.join(unknown)}")
        app.config.update(values)

    return set_values


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def fuzzed_app(make_app, prices):
    """An app for schemathesis to call: prices mapped, and a user ``fuzz@example.com`` (see ``fresh_token``)."""
    # The limiter would answer 429 to most generated logins; 429 is covered in test_security.
    app = make_app(AUTH_LOGIN_RATE_LIMIT="100000 per minute", AUTH_PASSWORD_RESET_RATE_LIMIT="100000 per minute")
    register(app.test_client(), email="fuzz@example.com")
    return app


@pytest.fixture
def user(client):
    return register(client)


@pytest.fixture
def auth_headers(client, user):
    return bearer(login(client))


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
def flow(live, emulator, stripe_client, prices):
    """A registered, logged-in user on ``live`` (``tests.support.billing.Flow``), with the ``prices`` the test's
    module sees (this file's two, or ``tests.support.billing``'s five where the module imports them)."""
    return start_flow(live, emulator, stripe_client, prices)


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
