"""Flask CLI commands: thin wrappers around service functions (CONTRACT "Command line")."""
import sys

import click
from flask.cli import with_appcontext
from sqlalchemy import or_, select

from app.auth import service, tokens
from app.billing.commands import COMMANDS as BILLING_COMMANDS
from app.billing.events import missing_event_types
from app.billing.provider import get_provider
from app.extensions import db
from app.models import User
from app.notifications.commands import deliver_notifications_command
from app.webhook.commands import COMMANDS as WEBHOOK_COMMANDS


@click.command("create-user")
@click.argument("email")
@click.option("--name", default=None, help="Display name.")
@click.option("--password-stdin", is_flag=True, help="Read the password from standard input.")
@with_appcontext
def create_user_command(email, name, password_stdin):
    """Create a user; the password comes from a prompt or standard input."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if len(password) < 8:
        raise click.BadParameter("the password needs at least 8 characters", param_hint="password")
    user = service.register_user(email, password, name)
    db.session.commit()
    click.echo(f"created user {user.id} <{user.email}>")


@click.command("prune-tokens")
@click.option("--hours", default=1, show_default=True, type=click.IntRange(min=0),
              help="Keep tokens that expired less than this many hours ago.")
@with_appcontext
def prune_tokens_command(hours):
    """Delete tokens expired more than HOURS hours ago, in batches; print how many."""
    deleted = tokens.prune(hours=hours)
    click.echo(f"pruned {deleted} expired token(s)")


def _users(keys, every):
    if every:
        return db.session.scalars(select(User.id).where(User.provider_id.is_not(None)).order_by(User.id)).all()
    ids = []
    for key in keys:
        match = User.email == service.normalise_email(key)
        if key.isdigit():
            match = or_(match, User.id == int(key))
        user_id = db.session.scalar(select(User.id).where(match))
        if user_id is None:
            raise click.BadParameter(f"no user with email or id {key!r}", param_hint="EMAIL_OR_ID")
        ids.append(user_id)
    return ids


@click.command("sync-user")
@click.argument("keys", nargs=-1, metavar="EMAIL_OR_ID...")
@click.option("--all", "every", is_flag=True, help="Every user with a provider customer.")
@with_appcontext
def sync_user_command(keys, every):
    """Pull users' live billing state from the provider and commit it as a webhook would."""
    if not keys and not every:
        raise click.UsageError("name at least one EMAIL_OR_ID, or pass --all")
    provider, failed = get_provider(), 0
    with click.progressbar(_users(keys, every), label="syncing", file=sys.stderr) as user_ids:
        for user_id in user_ids:
            user = db.session.get(User, user_id)
            try:
                result = provider.sync(user)
                db.session.commit()
            except Exception as exc:  # one user's failure must not stop the others
                db.session.rollback()
                failed += 1
                click.echo(f"\n{user.email}: FAILED ({exc.__class__.__name__}: {exc})")
                continue
            click.echo(f"\n{result.email}: {result.change_text()}")
    if failed:
        raise click.ClickException(f"{failed} user(s) could not be synced")


@click.command("check-webhook")
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


def register_commands(app):
    for command in (create_user_command, prune_tokens_command, sync_user_command, check_webhook_command,
                    deliver_notifications_command, *BILLING_COMMANDS, *WEBHOOK_COMMANDS):
        app.cli.add_command(command)
