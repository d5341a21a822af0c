"""``flask migrate-billing-mode``: move every live ``classic`` subscription to Stripe's ``flexible`` billing mode
(CONTRACT "Changes to the fifth round": credits never exceed what was paid)."""
import click
from flask.cli import with_appcontext

from app.billing import billing_modes
from app.billing.provider import get_provider
from app.cli import ServiceCommand
from app.errors import AppError
from app.extensions import db


@click.command("migrate-billing-mode", cls=ServiceCommand)
@click.option("--dry-run", is_flag=True, help="List the classic subscriptions; migrate nothing.")
@with_appcontext
def migrate_billing_mode_command(dry_run):
    """Migrate every live classic subscription to flexible; print each and classic / migrated / failed."""
    migrated, failed = 0, 0
    found = billing_modes.classic_live()
    for subscription in found:
        if dry_run:
            click.echo(f"{subscription.provider_id}: classic (dry run: not migrated)")
            continue
        try:
            billing_modes.migrate_one(get_provider(), subscription)
        except AppError as exc:  # one subscription Stripe refuses or cannot reach: the others still move
            db.session.rollback()
            failed += 1
            click.echo(f"{subscription.provider_id}: FAILED ({exc.__class__.__name__}: {exc})")
            continue
        db.session.commit()
        migrated += 1
        click.echo(f"{subscription.provider_id}: migrated to flexible")
    click.echo(f"classic {len(found)}, migrated {migrated}, failed {failed}"
               + (" (dry run: nothing migrated)" if dry_run else ""))
    if failed:
        raise click.ClickException(f"{failed} subscription(s) could not be migrated")
