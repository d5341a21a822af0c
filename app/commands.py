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
from app.billing import reconcile
from app.billing.commands import COMMANDS as BILLING_COMMANDS
from app.billing.events import missing_event_types
from app.billing.provider import get_provider
from app.cli import ServiceAppGroup, ServiceCommand, one_line_failures
from app.entitlements.commands import COMMANDS as ENTITLEMENT_COMMANDS
from app.extensions import db
from app.models import Organization, User
from app.notifications.commands import deliver_notifications_command
from app.schema import register_migrations
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


def _users(keys):
    """``(the ids of the users ``keys`` name, the keys that name nobody)``: each key an email or a user id."""
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


def _sync(billables, length, summary=False):
    """Sync ``billables`` (an iterable of ``length`` users and organisations) in one loop, each committed alone
    (``reconcile.sync_each``); echo a line each and, with ``summary``, the counts of each kind. Return the
    one-line failure when any could not be synced, else ``None``."""
    # The bar goes to a terminal only; the lines below come once it is done.
    progress = click.progressbar(length=length, label="syncing", file=sys.stderr) if sys.stderr.isatty() \
        else nullcontext()
    with progress as bar:
        result = reconcile.sync_each(get_provider(), billables, on_billable=bar and (lambda _: bar.update(1)))
    for name, synced in result.synced:
        click.echo(f"{name}: {synced.change_text()}")
    for name, exc in result.failures:
        click.echo(f"{name}: FAILED ({exc.__class__.__name__}: {exc})")
    if summary:
        click.echo(result.summary())
    return result.not_synced() if result.failed else None


def _fail_on(*problems):
    """End the command in one line naming every problem found, if any (the others were synced all the same)."""
    problems = [problem for problem in problems if problem]
    if problems:
        raise click.ClickException("; ".join(problems))


@click.command("sync-user", cls=ServiceCommand)
@click.argument("keys", nargs=-1, metavar="EMAIL_OR_ID...")
@click.option("--all", "every", is_flag=True, help="Every user and organisation with a provider customer.")
@with_appcontext
def sync_user_command(keys, every):
    """Pull users' (with --all, organisations' too) live billing state from the provider and commit it as a
    webhook would."""
    if keys and every:
        raise click.UsageError("name EMAIL_OR_IDs or pass --all, not both")
    if not keys and not every:
        raise click.UsageError("name at least one EMAIL_OR_ID, or pass --all")
    if every:
        queries = reconcile.every_customer()
        _fail_on(_sync(reconcile.each_billable(queries), reconcile.count(queries), summary=True))
        return
    ids, unknown = _users(keys)
    failed = _sync((db.session.get(User, user_id) for user_id in ids), len(ids))
    _fail_on(unknown and f"no user with email or id {', '.join(map(repr, unknown))}", failed)


@click.command("sync-org", cls=ServiceCommand)
@click.argument("ids", nargs=-1, required=True, metavar="ID...")
@with_appcontext
def sync_org_command(ids):
    """Pull organisations' live billing state from the provider and commit it as a webhook would."""
    known = set(db.session.scalars(select(Organization.id).where(Organization.id.in_(ids))))
    unknown = [organization_id for organization_id in ids if organization_id not in known]
    named = [organization_id for organization_id in dict.fromkeys(ids) if organization_id in known]
    failed = _sync((db.session.get(Organization, organization_id) for organization_id in named), len(named))
    _fail_on(unknown and f"no organisation with id {', '.join(map(repr, unknown))}", failed)


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


COMMANDS = (create_user_command, prune_tokens_command, sync_user_command, sync_org_command, check_webhook_command,
            deliver_notifications_command, *BILLING_COMMANDS, *WEBHOOK_COMMANDS, *USAGE_COMMANDS,
            *ENTITLEMENT_COMMANDS)


def register_commands(app):
    """Add the service's commands to ``app.cli`` and give the extensions' groups one-line failures too."""
    app.cli = ServiceAppGroup(app.cli.name, commands=app.cli.commands)
    for name, command in list(app.cli.commands.items()):
        if isinstance(command, click.Group):
            app.cli.add_command(one_line_failures(command), name)
    for command in COMMANDS:
        app.cli.add_command(command)
    register_migrations(app)
