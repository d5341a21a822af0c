"""CLI commands of the billing part: scheduled reconciliation (CONTRACT "Additions", issue 11)."""
import sys
import time

import click
from flask import current_app
from flask.cli import with_appcontext

from app.billing import reconcile, seat_drift
from app.billing.billing_mode_command import migrate_billing_mode_command
from app.billing.provider import get_provider
from app.cli import ServiceCommand
from app.observability import metrics


@click.command("reconcile", cls=ServiceCommand)
@click.option("--dry-run", is_flag=True, help="Report what has drifted; write nothing, here or at the provider.")
@with_appcontext
def reconcile_command(dry_run):
    """Sync every user whose billing state may have drifted and set organisations' seats back to their
    members; print checked / drifted / fixed / failed."""
    stale_days = current_app.config["RECONCILE_STALE_DAYS"]
    with click.progressbar(length=reconcile.count_candidates(stale_days), label="reconciling",
                           file=sys.stderr) as bar:
        result = reconcile.reconcile(get_provider(), stale_days, dry_run=dry_run, on_user=lambda _: bar.update(1))
    for synced in result.changes:
        click.echo(f"{synced.email}: {synced.change_text()}")
    for email, exc in result.failures:
        click.echo(f"{email}: FAILED ({exc.__class__.__name__}: {exc})")
    drifted, seat_failures = seat_drift.reconcile_seats(get_provider(), dry_run=dry_run)
    for drift in drifted:
        click.echo(str(drift) + (" (dry run: not set)" if dry_run else ""))
    for organization_id, exc in seat_failures:
        click.echo(f"{organization_id}: FAILED ({exc.__class__.__name__}: {exc})")
    click.echo(f"checked {result.checked}, drifted {result.drifted}, fixed {result.fixed}, failed {result.failed}"
               + (" (dry run: nothing written)" if dry_run else ""))
    if not dry_run:
        metrics.reconcile_finished(result.checked, result.drifted, result.fixed, result.failed, time.time())
    if result.failed:
        raise click.ClickException(f"{result.failed} user(s) could not be synced")
    if seat_failures:
        raise click.ClickException(f"{len(seat_failures)} organisation(s) could not be synced")
    return result


COMMANDS = (reconcile_command, migrate_billing_mode_command)
