"""The migrations build exactly the schema the models describe, on an empty database."""
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from app import create_app
from app.extensions import db
from tests.conftest import BASE_CONFIG


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
