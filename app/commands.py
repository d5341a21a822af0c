"""Flask CLI commands: thin wrappers around service functions (CONTRACT "Command line")."""
import sys

import click
from flask.cli import with_appcontext

from app.auth import service, tokens
from app.extensions import db


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


def register_commands(app):
    for command in (create_user_command, prune_tokens_command):
        app.cli.add_command(command)
