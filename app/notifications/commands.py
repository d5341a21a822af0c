"""``flask deliver-notifications``: the outbox's delivery worker (CONTRACT "Additions": command line)."""
import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy.exc import SQLAlchemyError

from app.cli import ServiceCommand
from app.config_sections import missing_secret_key
from app.extensions import db
from app.notifications import outbox
from app.notifications.channels import ChannelUnusable, configured_channels
from app.stopping import stop_on_signals
from app.timeutil import isoformat_z, utcnow


def _list_dead():
    rows = outbox.dead_deliveries()
    for delivery, notification, user in rows:
        click.echo(f"{delivery.id}\t{delivery.channel}\tnotification {notification.id} {notification.kind}\t"
                   f"{user.email}\t{delivery.attempts} attempts\t{isoformat_z(delivery.updated_at)}\t"
                   f"{delivery.last_error}")
    click.echo(f"{len(rows)} dead deliver{'y' if len(rows) == 1 else 'ies'}")


def _usable_channels():
    channels = configured_channels(current_app.config)
    if not channels:
        raise click.ClickException("no notification channel is configured: set MAIL_SERVER or NOTIFY_WEBHOOK_URL")
    if "email" in channels and not current_app.config["SECRET_KEY"]:
        # The account emails carry tokens signed as they are sent; without the key each would fail until dead.
        raise click.ClickException(str(missing_secret_key()))
    try:
        for channel in channels.values():
            channel.check()
    except ChannelUnusable as exc:
        raise click.ClickException(str(exc)) from None
    return channels


@click.command("deliver-notifications", cls=ServiceCommand)
@click.option("--once", is_flag=True, help="Deliver what is due now, then exit (for cron).")
@click.option("--dead", is_flag=True, help="List the deliveries that ran out of attempts.")
@click.option("--retry-dead", is_flag=True, help="Queue every dead delivery again, with fresh attempts.")
@with_appcontext
def deliver_notifications_command(once, dead, retry_dead):
    """Deliver queued notifications on the configured channels until stopped (SIGTERM or Ctrl-C)."""
    if once + dead + retry_dead > 1:
        raise click.UsageError("--once, --dead and --retry-dead exclude each other")
    try:
        if dead:
            return _list_dead()
        if retry_dead:
            queued = outbox.retry_dead(utcnow())
            db.session.commit()
            return click.echo(f"queued {queued} dead deliver{'y' if queued == 1 else 'ies'} again")
        channels = _usable_channels()
        click.echo(f"delivering notifications by {', '.join(channels)}"
                   + (": what is due now" if once else " until stopped (SIGTERM or Ctrl-C)"))
        with stop_on_signals() as stop:
            totals = outbox.run(channels, current_app.config, once, stop)
    except SQLAlchemyError as exc:
        raise click.ClickException(f"DATABASE_URL: the database failed ({exc.__class__.__name__}: "
                                   f"{str(exc).splitlines()[0]})") from None
    click.echo(f"delivered {totals['delivered']}, failed {totals['retry']} (retry scheduled), dead {totals['dead']}")
