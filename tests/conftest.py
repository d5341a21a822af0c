"""Shared fixtures: ``app``, ``client``, ``runner`` on a migrated database.

The database is SQLite in a temporary folder, or the PostgreSQL database named by
``TEST_DATABASE_URL`` (CI sets one up and throws it away). The schema is built once per session by
the real migrations; every test then starts from empty tables.
"""
import os

import pytest
from flask_migrate import upgrade
from sqlalchemy import create_engine, text

from app import create_app
from app.extensions import db

MIGRATIONS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
WEBHOOK_SECRET = "whsec_test_secret"
PASSWORD = "correct horse battery"

BASE_CONFIG = {
    "TESTING": True,
    "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
    # Argon2id with small costs keeps the suite fast; production defaults are in app.config.
    "PASSWORD_HASH_TIME_COST": 1,
    "PASSWORD_HASH_MEMORY_COST": 1024,
    "PROVIDER_PLANS": {"price_basic": "basic", "price_pro": "pro"},
}


def _reset_schema(url):
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("DROP SCHEMA public CASCADE"))
        conn.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory):
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        _reset_schema(url)
    else:
        url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"
    migrating = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": url})
    with migrating.app_context():
        upgrade(directory=MIGRATIONS)
        db.engine.dispose()
    return url


@pytest.fixture
def make_app(database_url):
    """Return a factory of apps on the test database with extra config; tables are emptied afterwards."""
    made = []

    def factory(**config):
        app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": database_url, **config})
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
            db.engine.dispose()


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
def user(client):
    return register(client)


@pytest.fixture
def auth_headers(client, user):
    return bearer(login(client))
