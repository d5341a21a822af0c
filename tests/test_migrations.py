"""The migrations build exactly the schema the models describe, on an empty database."""
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from app import create_app
from app.extensions import db
from tests.support.config import BASE_CONFIG


def test_models_and_migrations_agree(app):
    # The session's database was built by `upgrade` from the migrations alone.
    with app.app_context(), db.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), db.metadata)
    assert diff == []


def test_flask_db_upgrade_on_an_empty_sqlite_database(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": url})
    result = app.test_cli_runner().invoke(args=["db", "upgrade", "--directory", "migrations"])
    assert result.exit_code == 0, result.output
    engine = create_engine(url)
    assert {"users", "personal_access_tokens", "alembic_version"} <= set(inspect(engine).get_table_names())
    engine.dispose()


def test_existing_users_get_their_own_idempotency_token(tmp_path):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": url})
    runner = app.test_cli_runner()
    assert runner.invoke(args=["db", "upgrade", "0003", "--directory", "migrations"]).exit_code == 0
    engine = create_engine(url)
    with engine.begin() as conn:
        for n in (1, 2):
            conn.execute(text("INSERT INTO users (email, password_hash, created_at, updated_at) "
                              "VALUES (:email, 'x', '2026-01-01', '2026-01-01')"), {"email": f"u{n}@example.com"})
    assert runner.invoke(args=["db", "upgrade", "--directory", "migrations"]).exit_code == 0
    with engine.connect() as conn:
        tokens = conn.execute(text("SELECT idempotency_token FROM users")).scalars().all()
    engine.dispose()
    assert len(tokens) == 2 and len(set(tokens)) == 2 and all(len(t) == 32 for t in tokens)


def test_a_deleted_users_id_is_never_given_to_another(app):
    """SQLite reuses the largest rowid unless the table is AUTOINCREMENT (issue 32 item 6); PostgreSQL never does."""
    insert = text("INSERT INTO users (email, password_hash, idempotency_token, created_at, updated_at) "
                  "VALUES (:email, 'x', :token, '2026-01-01', '2026-01-01') RETURNING id")
    with app.app_context(), db.engine.begin() as conn:
        first = conn.execute(insert, {"email": "reuse-1@example.com", "token": "a" * 32}).scalar_one()
        conn.execute(text("DELETE FROM users WHERE id = :id"), {"id": first})
        second = conn.execute(insert, {"email": "reuse-2@example.com", "token": "b" * 32}).scalar_one()
        conn.execute(text("DELETE FROM users WHERE id = :id"), {"id": second})
    assert second > first
