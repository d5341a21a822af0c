"""CLI of usage billing: service keys, the delivery worker, the ledger (CONTRACT "Usage-based billing")."""
import json

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select, update

from app.billing.provider import get_provider
from app.cli import ServiceCommand
from app.extensions import db
from app.models import UsageEvent
from app.models.usage import DELIVERED, FAILED, PENDING
from app.stopping import stop_on_signals
from app.timeutil import isoformat_z, utcnow
from app.usage import keys, worker


@click.command("create-service-key", cls=ServiceCommand)
@click.argument("name")
@click.option("--ability", "abilities", multiple=True, default=("usage:write",), show_default=True,
              help="What the key may do (repeatable).")
@with_appcontext
def create_service_key_command(name, abilities):
    """Create a service key for the app's servers and print it once (only its digest is kept)."""
    try:
        key, plain_text = keys.create(name, abilities)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    db.session.commit()
    click.echo(f"service key {key.id} ({key.name}, {', '.join(key.abilities)}); shown once, keep it secret:")
    click.echo(plain_text)


@click.command("service-keys", cls=ServiceCommand)
@with_appcontext
def service_keys_command():
    """List the service keys: id, name, abilities, created, last used, revoked."""
    found = keys.listed()
    for key in found:
        click.echo(f"{key.id}\t{key.name}\t{','.join(key.abilities)}\tcreated {isoformat_z(key.created_at)}\t"
                   f"last used {isoformat_z(key.last_used_at) if key.last_used_at else 'never'}\t"
                   + (f"revoked {isoformat_z(key.revoked_at)}" if key.revoked_at else "active"))
    click.echo(f"{len(found)} service key{'' if len(found) == 1 else 's'}")


@click.command("revoke-service-key", cls=ServiceCommand)
@click.argument("key_id", type=int)
@with_appcontext
def revoke_service_key_command(key_id):
    """Revoke a service key: it authenticates nothing from now on."""
    key = keys.revoke(key_id)
    db.session.commit()
    click.echo(f"revoked service key {key.id} ({key.name})")


@click.command("deliver-usage", cls=ServiceCommand)
@click.option("--once", is_flag=True,
              help="Deliver what can be claimed now, waiting out the retries of those, then exit; events another "
                   "worker holds are left to it, never waited for.")
@with_appcontext
def deliver_usage_command(once):
    """Send accepted usage events to Stripe's meter events until stopped (SIGTERM or Ctrl-C)."""
    rate = current_app.config["USAGE_DELIVERY_RATE"]
    click.echo(f"delivering usage events at most {rate}/s"
               + (": what can be claimed now" if once else " until stopped (SIGTERM or Ctrl-C)"))
    with stop_on_signals() as stop:
        totals = worker.run(get_provider(), current_app.config, once, stop)
    left = worker.pending_count() if once else 0
    click.echo(f"delivered {totals['delivered']}, failed {totals['failed']}, retried {totals['retry']}"
               + (f"; {left} pending left to other workers (claimed, or waiting out a retry)" if left else ""))


def _as_dict(event):
    return {"id": event.id, "identifier": event.identifier, "event_name": event.event_name,
            "customer": event.customer, "value": event.value, "timestamp": event.timestamp, "status": event.status,
            "attempts": event.attempts, "last_error": event.last_error, "created_at": isoformat_z(event.created_at)}


@click.command("usage-events", cls=ServiceCommand)
@click.option("--failed", is_flag=True, help="Only the events Stripe refused.")
@click.option("--json", "as_json", is_flag=True, help="A JSON array instead of a table ([] when there are none).")
@with_appcontext
def usage_events_command(failed, as_json):
    """List the usage events not yet at Stripe (pending and failed), oldest first."""
    statuses = (FAILED,) if failed else (PENDING, FAILED)
    found = db.session.scalars(select(UsageEvent).where(UsageEvent.status.in_(statuses))
                               .order_by(UsageEvent.id)).all()
    if as_json:  # one JSON document, as ``flask webhook-events --json``: a script parses it whole
        click.echo(json.dumps([_as_dict(event) for event in found]))
        return
    for event in found:
        click.echo(f"{event.id}\t{event.identifier}\t{event.event_name}\t{event.customer}\t{event.value}\t"
                   f"{event.status}\t{event.attempts} attempts\t{event.last_error or ''}")
    click.echo(f"{len(found)} usage event{'' if len(found) == 1 else 's'}")


@click.command("usage-replay", cls=ServiceCommand)
@click.argument("ids", nargs=-1, type=int, metavar="ID...")
@click.option("--failed", "all_failed", is_flag=True, help="Every failed event.")
@with_appcontext
def usage_replay_command(ids, all_failed):
    """Queue failed usage events again (same identifier: Stripe never counts one twice)."""
    if ids and all_failed:
        raise click.UsageError("name event IDs or pass --failed, not both")
    if not ids and not all_failed:
        raise click.UsageError("name at least one event ID, or pass --failed")
    if ids:
        known = dict(db.session.execute(select(UsageEvent.id, UsageEvent.status).where(UsageEvent.id.in_(ids))).all())
        for event_id in ids:
            if event_id not in known:
                raise click.ClickException(f"no usage event {event_id}")
            if known[event_id] == DELIVERED:
                raise click.ClickException(f"usage event {event_id} was delivered: Stripe has it")
    chosen = UsageEvent.id.in_(ids) if ids else UsageEvent.status == FAILED
    queued = db.session.execute(update(UsageEvent).where(chosen, UsageEvent.status != DELIVERED).values(
        status=PENDING, attempts=0, next_attempt_at=utcnow(), last_error=None)
        .execution_options(synchronize_session=False)).rowcount
    db.session.commit()
    click.echo(f"queued {queued} usage event{'' if queued == 1 else 's'} again")


COMMANDS = (create_service_key_command, service_keys_command, revoke_service_key_command, deliver_usage_command,
            usage_events_command, usage_replay_command)
