"""Flask CLI commands: thin wrappers around service functions (CONTRACT "Command line").

Every command is an ``app.cli.ServiceCommand``: a failure the operator can act on (the provider
or the database unreachable, a lock wait that ran out, a refused input) is one line and exit
status 1, never a traceback. The commands own their transactions, as views do.
"""
import sys
from contextlib import nullcontext
from functools import partial

import click
from flask.cli import with_appcontext
from sqlalchemy import or_, select

from app.auth import expiry, service
from app.auth.schemas import RegisterSchema
from app.billing.commands import COMMANDS as BILLING_COMMANDS
from app.billing.events import missing_event_types
from app.billing.provider import get_provider
from app.cli import ServiceAppGroup, ServiceCommand, one_line_failures
from app.extensions import db
from app.models import User
from app.notifications.commands import deliver_notifications_command
from app.usage.commands import COMMANDS as USAGE_COMMANDS
from app.webhook.commands import COMMANDS as WEBHOOK_COMMANDS


def _read_password(from_stdin):
    if from_stdin:
        return sys.stdin.readline().rstrip("\n")
    return click.prompt("Password", hide_input=True, confirmation_prompt=True)


@click.command("create-user", cls=ServiceCommand)
@click.argument("email")
@click.option("--name", default=None, help="Display name.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@with_appcontext
def create_user_command(email, name, password_stdin):
    """Create a user; the password comes from a prompt or standard input."""
    body = RegisterSchema().load({"email": email, "password": _read_password(password_stdin), "name": name})
    user = service.register_user(body["email"], body["password"], body["name"])
    db.session.commit()
    click.echo(f"created user {user.id} <{user.email}>")


@click.command("prune-tokens", cls=ServiceCommand)
@click.option("--hours", default=1, show_default=True, type=click.IntRange(min=0),
              help="Keep tokens that expired less than this many hours ago.")
@with_appcontext
def prune_tokens_command(hours):
    """Delete tokens expired more than HOURS hours ago, in batches; print how many."""
    # The bar goes to a terminal only; the count below stays the last line of a cron log.
    progress = (click.progressbar(length=expiry.count_prunable(hours), label="pruning", file=sys.stderr)
                if sys.stderr.isatty() else nullcontext())
    with progress as bar:
        deleted = expiry.prune(hours=hours, on_batch=partial(_commit_batch, bar))
    click.echo(f"pruned {deleted} expired token(s)")


def _commit_batch(bar, count):
    db.session.commit()  # each batch is its own transaction (expiry.prune)
    if bar is not None:
        bar.update(count)


def _users(keys, every):
    """``(user ids, the keys that name nobody)``: every user with a customer for ``every``, else each key's user."""
    if every:
        return db.session.scalars(select(User.id).where(User.provider_id.is_not(None)).order_by(User.id)).all(), []
    ids, unknown = [], []
    for key in keys:
        match = User.email == service.normalise_email(key)
        if key.isdigit():
            match = or_(match, User.id == int(key))
        user_id = db.session.scalar(select(User.id).where(match))
        if user_id is None:
            unknown.append(key)
        else:
            ids.append(user_id)
    return ids, unknown


@click.command("sync-user", cls=ServiceCommand)
@click.argument("keys", nargs=-1, metavar="EMAIL_OR_ID...")
@click.option("--all", "every", is_flag=True, help="Every user with a provider customer.")
@with_appcontext
def sync_user_command(keys, every):
    """Pull users' live billing state from the provider and commit it as a webhook would."""
    if keys and every:
        raise click.UsageError("name EMAIL_OR_IDs or pass --all, not both")
    if not keys and not every:
        raise click.UsageError("name at least one EMAIL_OR_ID, or pass --all")
    provider, failed = get_provider(), 0
    # The bar goes to a terminal only; a line printed on the bar's terminal starts below the bar.
    on_terminal = sys.stderr.isatty()
    start = "\n" if on_terminal and sys.stdout.isatty() else ""
    ids, unknown = _users(keys, every)
    progress = click.progressbar(ids, label="syncing", file=sys.stderr) if on_terminal else nullcontext(ids)
    with progress as user_ids:
        for user_id in user_ids:
            user = db.session.get(User, user_id)
            try:
                result = provider.sync(user)
                db.session.commit()
            except Exception as exc:  # one user's failure must not stop the others
                db.session.rollback()
                failed += 1
                click.echo(f"{start}{user.email}: FAILED ({exc.__class__.__name__}: {exc})")
                continue
            click.echo(f"{start}{result.email}: {result.change_text()}")
    problems = [f"no user with email or id {', '.join(map(repr, unknown))}"] if unknown else []
    if failed:
        problems.append(f"{failed} user(s) could not be synced")
    if problems:  # the others were synced all the same
        raise click.ClickException("; ".join(problems))


@click.command("check-webhook", cls=ServiceCommand)
@click.option("--url", default=None, help="Check only the endpoint with this URL.")
@with_appcontext
def check_webhook_command(url):
    """Check that a provider webhook endpoint sends every event type the service needs."""
    endpoints = [e for e in get_provider().list_webhook_endpoints()
                 if e.get("status", "enabled") == "enabled" and (url is None or e.get("url") == url)]
    if not endpoints:
        raise click.ClickException("no enabled webhook endpoint" + (f" with URL {url}" if url else ""))
    complete = False
    for endpoint in endpoints:
        missing = missing_event_types(endpoint.get("enabled_events"))
        complete = complete or not missing
        verdict = "ok" if not missing else "missing " + ", ".join(missing)
        click.echo(f"{endpoint.get('id')} {endpoint.get('url')}: {verdict}")
    if not complete:
        raise click.ClickException("no endpoint sends every event type the service needs")


COMMANDS = (create_user_command, prune_tokens_command, sync_user_command, check_webhook_command,
            deliver_notifications_command, *BILLING_COMMANDS, *WEBHOOK_COMMANDS, *USAGE_COMMANDS)


def register_commands(app):
    """Add the service's commands to ``app.cli`` and give the extensions' groups one-line failures too."""
    app.cli = ServiceAppGroup(app.cli.name, commands=app.cli.commands)
    for name, command in list(app.cli.commands.items()):
        if isinstance(command, click.Group):
            app.cli.add_command(one_line_failures(command), name)
    for command in COMMANDS:
        app.cli.add_command(command)
