"""CLI commands of the billing part: scheduled reconciliation (CONTRACT "Additions", issue 11)."""
import sys
import time

import click
from flask import current_app
from flask.cli import with_appcontext

from app.billing import reconcile
from app.billing.billing_mode_command import migrate_billing_mode_command
from app.billing.provider import get_provider
from app.cli import ServiceCommand
from app.models import User
from app.observability import metrics


@click.command("reconcile", cls=ServiceCommand)
@click.option("--dry-run", is_flag=True, help="Report what has drifted; write nothing, here or at the provider.")
@with_appcontext
def reconcile_command(dry_run):
    """Sync every user whose billing state may have drifted and every organisation, setting organisations'
    seats back to their seat count; print checked / drifted / fixed / failed of each kind."""
    stale_days = current_app.config["RECONCILE_STALE_DAYS"]
    with click.progressbar(length=reconcile.count(reconcile.to_reconcile(stale_days)), label="reconciling",
                           file=sys.stderr) as bar:
        result = reconcile.reconcile(get_provider(), stale_days, dry_run=dry_run, on_billable=lambda _: bar.update(1))
    for name, synced in result.changes:
        click.echo(f"{name}: {synced.change_text()}")
    for drift in result.seats:
        click.echo(str(drift) + (" (dry run: not set)" if dry_run else ""))
    for name, exc in result.failures:
        click.echo(f"{name}: FAILED ({exc.__class__.__name__}: {exc})")
    click.echo(result.summary() + (" (dry run: nothing written)" if dry_run else ""))
    if not dry_run:
        users = result.by_kind[User]
        metrics.reconcile_finished(users.checked, users.drifted, users.fixed, users.failed, time.time())
    if result.failed:
        raise click.ClickException(result.not_synced())
    return result


COMMANDS = (reconcile_command, migrate_billing_mode_command)
