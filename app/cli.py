"""The CLI's one failure mechanism: every command (and group) ends a failure it can name in one line.

Provider failures (Stripe unreachable or refusing), database failures (unreachable, a lock wait
that ran out) and refused input become click's ``Error: <one line>`` and exit status 1, never a
traceback. Commands are declared with ``cls=ServiceCommand``; ``register_commands`` wraps the
extensions' groups.
"""
import click
from marshmallow import ValidationError
from sqlalchemy.exc import DBAPIError

from app.error_handlers import is_lock_timeout
from app.errors import AppError


def database_failure(error):
    """Return one line saying why a database statement failed (``error`` is SQLAlchemy's ``DBAPIError``)."""
    if is_lock_timeout(error):
        return "the database is busy: a lock wait timed out; try again shortly"
    cause = (str(error.orig).strip().splitlines() or [error.orig.__class__.__name__])[0]
    return f"the database failed: {cause}"


def validation_failure(error):
    """Return one line listing a marshmallow ``ValidationError``'s messages, field by field."""
    messages = error.normalized_messages().items()
    return "; ".join(f"{name}: {' '.join(map(str, texts))}" for name, texts in messages)


class _OneLineFailures:
    """Ends a command's expected failures with one line and exit status 1 (click's ``Error: ...``)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except AppError as exc:  # ProviderUnavailable, ProviderRejected, EmailTaken, ...
            raise click.ClickException(exc.message) from None
        except ValidationError as exc:
            raise click.ClickException(validation_failure(exc)) from None
        except DBAPIError as exc:
            raise click.ClickException(database_failure(exc)) from None


class ServiceCommand(_OneLineFailures, click.Command):
    """A command of the service's: its expected failures are one line and exit status 1."""


class ServiceGroup(_OneLineFailures, click.Group):
    """A group whose subcommands' expected failures are one line and exit status 1."""


def one_line_failures(group):
    """Return a ``ServiceGroup`` over ``group``'s subcommands."""
    # The extensions' groups (Flask-Migrate's ``db``, flask-smorest's ``openapi``) are shared
    # module-level objects: each app gets a ServiceGroup over the same subcommands instead.
    return ServiceGroup(group.name, commands=group.commands, callback=group.callback, params=group.params,
                        help=group.help, short_help=group.short_help)
