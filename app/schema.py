"""The database schema's migrations (Flask-Migrate, Alembic), loaded when something migrates.

Importing Flask-Migrate imports Alembic: a tenth of a second of CPU at every start of a ``flask`` command or a
gunicorn worker, for what only ``flask db`` and a test's set-up use. So the app's ``db`` command group (its
options as Flask-Migrate's) imports Flask-Migrate's commands when it is first asked for one, and ``bind`` gives an
app the settings that ``flask_migrate.upgrade`` reads.
"""
import click
from flask import current_app, g
from flask.cli import ScriptInfo, with_appcontext

from app.cli import ServiceGroup
from app.extensions import db


def bind(app):
    """Give ``app`` Flask-Migrate's settings (``app.extensions["migrate"]``: batch mode, which lets Alembic alter
    SQLite tables by copying them, and type comparison); return ``app``. Imports Alembic."""
    if "migrate" not in app.extensions:
        from flask_migrate import Migrate

        ours = app.cli.commands.get("db")
        Migrate(render_as_batch=True, compare_type=True).init_app(app, db)
        if ours is not None:  # init_app adds Flask-Migrate's own group: keep ours, with its one-line failures
            app.cli.add_command(ours, "db")
    return app


class MigrationsGroup(ServiceGroup):
    """A group whose commands are Flask-Migrate's, imported on first use, with the service's one-line failures."""

    @staticmethod
    def _migrations(ctx):
        bind(current_app._get_current_object() if current_app else ctx.ensure_object(ScriptInfo).load_app())
        from flask_migrate.cli import db as group

        return group

    def list_commands(self, ctx):
        return self._migrations(ctx).list_commands(ctx)

    def get_command(self, ctx, cmd_name):
        return self._migrations(ctx).get_command(ctx, cmd_name)


@click.group("db", cls=MigrationsGroup)
@click.option("-d", "--directory", default=None, help='Migration script directory (default is "migrations")')
@click.option("-x", "--x-arg", multiple=True, help="Additional arguments consumed by custom env.py scripts")
@with_appcontext
def migrations_group(directory, x_arg):
    """Perform database migrations."""
    g.directory, g.x_arg = directory, x_arg  # what Flask-Migrate's commands read, as its own group sets them


def register_migrations(app):
    """Add the ``db`` command group to ``app.cli``."""
    app.cli.add_command(migrations_group, "db")
