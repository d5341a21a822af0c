"""The throwaway database of one bench run, the service's environment on it, and its seeded rows."""
import hashlib
import json
import os
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import create_engine, func, insert, select, text

from app import config as app_config
from app.models import AccessToken
from scripts.bench.entitlements import PLAN_FEATURES
from scripts.bench.settings import PG_ADMIN, WEBHOOK_SECRET


class Database:
    """A throwaway database: ``url`` for SQLAlchemy and the service; ``drop()`` removes it."""

    def __init__(self, kind, workdir):
        self.kind = kind
        if kind == "postgres":
            import psycopg

            self.name = f"subs_bench_{secrets.token_hex(4)}"
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
            self.url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{self.name}"
        else:
            self.name = str(Path(workdir) / "bench.db")
            self.url = f"sqlite:///{self.name}"
        self.engine = create_engine(self.url)

    def drop(self):
        """Drop the database (PostgreSQL) or delete its files (SQLite)."""
        self.engine.dispose()
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(self.name + suffix).unlink(missing_ok=True)


def service_env(db, emulator_url, plans):
    """Return the service's environment on ``db``, against the emulator at ``emulator_url``, with ``plans``."""
    env = {k: v for k, v in os.environ.items() if k not in app_config.DEFAULTS and not k.startswith("FLASK_")}
    env.update(
        DATABASE_URL=db.url,
        PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET,
        SECRET_KEY="bench secret key",
        PROVIDER_API_KEY="sk_test_bench",
        PROVIDER_API_BASE=emulator_url,
        PROVIDER_PLANS=json.dumps(plans),
        PLAN_FEATURES=json.dumps(PLAN_FEATURES),
        AUTH_LOGIN_RATE_LIMIT="100000 per minute",
        # Its sequential rows register more users than the default 20 an hour per client address, and
        # swap one user 40 times (5 Stripe calls each against 60 a minute); the limit's own row sets it.
        AUTH_REGISTER_RATE_LIMIT="100000 per hour",
        PROVIDER_CALLS_RATE_LIMIT="100000 per minute",
        # The bench measures throughput, not the limits: per-process counts are meant here.
        RATELIMIT_ALLOW_MEMORY="true",
        LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def seed_other_tokens(db, user_id, count):
    """Give ``user_id`` ``count`` more valid tokens (executemany of precomputed rows)."""
    now = datetime.now(UTC)
    rows = [
        {"user_id": user_id, "name": "bench", "token": hashlib.sha256(f"bench-{i}".encode()).hexdigest(),
         "abilities": [], "created_at": now, "updated_at": now, "expires_at": now + timedelta(days=30)}
        for i in range(count)
    ]
    with db.engine.begin() as conn:
        conn.execute(insert(AccessToken.__table__), rows)


def seed_expired_tokens(db, user_id, count):
    """Insert ``count`` tokens that expired two days ago, in one statement."""
    now = datetime.now(UTC)
    params = {"uid": user_id, "n": count, "expired": now - timedelta(days=2), "created": now - timedelta(days=3)}
    if db.kind == "postgres":
        statement = text(
            "INSERT INTO personal_access_tokens (user_id, name, token, abilities, expires_at, created_at, updated_at) "
            "SELECT :uid, 'bench-expired', 'x' || lpad(to_hex(g), 63, '0'), '[]'::json, :expired, :created, :created "
            "FROM generate_series(1, :n) AS g")
    else:
        # SQLite keeps UTC datetimes as naive text in SQLAlchemy's format; compare like with like.
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        params.update(expired=params["expired"].strftime(fmt), created=params["created"].strftime(fmt))
        statement = text(
            "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < :n) "
            "INSERT INTO personal_access_tokens (user_id, name, token, abilities, expires_at, created_at, updated_at) "
            "SELECT :uid, 'bench-expired', printf('x%063x', g), '[]', :expired, :created, :created FROM s")
    with db.engine.begin() as conn:
        conn.execute(statement, params)
    # Statistics as autovacuum/autoanalyze would have them on a table that grew over time.
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE personal_access_tokens"))


def count_rows(db, model, *where):
    """Return how many rows of ``model`` match ``where``."""
    with db.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(model.__table__).where(*where))
