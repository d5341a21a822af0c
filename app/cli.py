"""The CLI's one failure mechanism: every command (and group) ends a failure it can name in one line.

Provider failures (Stripe unreachable or refusing), database failures (unreachable, a lock wait
that ran out) and refused input become click's ``Error: <one line>`` and exit status 1, never a
traceback. A usage error (an unknown command or option, a missing or bad argument) is one line
too, ``Error: <what> (see 'flask <command> --help')``, with click's exit status 2, instead of
click's usage block. Commands are declared with ``cls=ServiceCommand``; ``register_commands`` wraps
the extensions' groups and the app's own command group (``ServiceAppGroup``).
"""
import click
from click.exceptions import NoArgsIsHelpError
from flask.cli import AppGroup
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


class OneLineUsageError(click.UsageError):
    """A usage error shown as one line pointing at the command's help; exit status 2, as click's."""

    def show(self, file=None):
        """Print ``Error: <message> (see '<command> --help')`` to ``file`` (standard error by default)."""
        hint = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"Error: {self.format_message().rstrip('.')}{hint}", file=file, err=file is None)


def _one_line(error):
    if isinstance(error, (OneLineUsageError, NoArgsIsHelpError)):  # the latter is the help a bare group prints
        return error
    return OneLineUsageError(error.format_message(), error.ctx)


class _OneLineFailures:
    """Ends a command's expected failures with one line: exit status 1, or 2 for a usage error."""

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:  # an unknown option, a missing argument, a value of the wrong type
            raise _one_line(exc) from None

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # an unknown subcommand, or one the command raised itself
            raise _one_line(exc) from None
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


class ServiceAppGroup(_OneLineFailures, AppGroup):
    """The app's ``flask`` command group: one-line failures, and an unknown command name is one line too."""

    def get_command(self, ctx, cmd_name):
        """Return the command named ``cmd_name``; raise a one-line usage error when there is none."""
        command = super().get_command(ctx, cmd_name)
        # The ``flask`` command asks the app's group last, after its own commands (run, shell,
        # routes), so a name unknown here is unknown everywhere. Completion asks resiliently, for None.
        if command is None and not ctx.resilient_parsing:
            raise OneLineUsageError(f"No such command {cmd_name!r}.", ctx)
        return command


def one_line_failures(group):
    """Return a ``ServiceGroup`` over ``group``'s subcommands."""
    # The extensions' groups (Flask-Migrate's ``db``, flask-smorest's ``openapi``) are shared
    # module-level objects: each app gets a ServiceGroup over the same subcommands instead.
    return ServiceGroup(group.name, commands=group.commands, callback=group.callback, params=group.params,
                        help=group.help, short_help=group.short_help)
