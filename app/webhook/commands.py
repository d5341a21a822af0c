"""CLI commands of the failed-event ledger: list, replay, prune (CONTRACT "Additions", issue 11)."""
import json

import click
from flask import current_app
from flask.cli import with_appcontext
from sqlalchemy import select

from app.cli import ServiceCommand
from app.extensions import db
from app.models import FailedWebhookEvent
from app.timeutil import isoformat_z
from app.webhook import failures, service

_COLUMNS = ("EVENT", "TYPE", "CUSTOMER", "ATTEMPTS", "FIRST FAILED", "LAST FAILED", "RESOLVED", "ERROR")


def as_json(record):
    """Return a failure record as a JSON-ready dict (timestamps ISO 8601 UTC)."""
    return {
        "id": record.id, "type": record.type, "customer": record.customer, "attempts": record.attempts,
        "error_class": record.error_class, "error_message": record.error_message,
        "first_failed_at": isoformat_z(record.first_failed_at), "last_failed_at": isoformat_z(record.last_failed_at),
        "resolved_at": isoformat_z(record.resolved_at),
    }


def _table(rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(_COLUMNS, *rows, strict=True)]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
                     for row in (_COLUMNS, *rows))


@click.command("webhook-events", cls=ServiceCommand)
@click.option("--failed", "open_only", is_flag=True, help="Only events still failing (not resolved).")
@click.option("--json", "as_json_output", is_flag=True, help="A JSON array instead of a table.")
@with_appcontext
def webhook_events_command(open_only, as_json_output):
    """List the failed-event ledger, the most recent failure first."""
    records = [as_json(record) for record in failures.failed_events(open_only=open_only)]
    if as_json_output:
        click.echo(json.dumps(records, indent=2))
    elif not records:
        click.echo("no failed events")
    else:
        click.echo(_table([(r["id"], r["type"], r["customer"] or "-", r["attempts"], r["first_failed_at"],
                            r["last_failed_at"], r["resolved_at"] or "-", f"{r['error_class']}: {r['error_message']}")
                           for r in records]))


def _replay(payload):
    """Process a stored payload as a delivery would; return the outcome, or ``FAILED (...)``."""
    event = json.loads(payload)
    try:
        with failures.recorded(event, payload):
            outcome = service.process_event(event)
            db.session.commit()
    except Exception as exc:  # one event's failure must not stop the others
        return f"FAILED ({exc.__class__.__name__}: {failures.error_message(exc)})"
    return outcome


def _replay_ids(event_ids, every_open):
    """Return the ids to replay: those named, or with ``--failed`` every open one; refuse neither and both."""
    if event_ids and every_open:
        raise click.UsageError("name EVENT_IDs or pass --failed, not both")
    if not event_ids and not every_open:
        raise click.UsageError("name at least one EVENT_ID, or pass --failed")
    if event_ids:
        return event_ids
    # In the order they first failed, the nearest to the order the provider sent them in.
    return [r.id for r in sorted(failures.failed_events(), key=lambda r: (r.first_failed_at, r.id))]


@click.command("webhook-replay", cls=ServiceCommand)
@click.argument("event_ids", nargs=-1, metavar="EVENT_ID...")
@click.option("--failed", "every_open", is_flag=True, help="Every event still failing.")
@with_appcontext
def webhook_replay_command(event_ids, every_open):
    """Process stored payloads of failed events again, through the delivery path."""
    event_ids = _replay_ids(event_ids, every_open)
    if not event_ids:
        click.echo("no failed events to replay")
        return
    payloads = {event_id: db.session.scalar(select(FailedWebhookEvent.payload).where(
        FailedWebhookEvent.id == event_id)) for event_id in event_ids}
    unknown = [event_id for event_id, payload in payloads.items() if payload is None]
    if unknown:
        raise click.BadParameter(f"no failed event {', '.join(unknown)}", param_hint="EVENT_ID")
    failed = 0
    for event_id, payload in payloads.items():
        outcome = _replay(payload)
        failed += outcome.startswith("FAILED")
        click.echo(f"{event_id}: {outcome}")
    if failed:
        raise click.ClickException(f"{failed} event(s) failed again")


@click.command("prune-webhook-events", cls=ServiceCommand)
@with_appcontext
def prune_webhook_events_command():
    """Delete failed-event records resolved more than FAILED_EVENT_RETENTION_DAYS days ago."""
    deleted = failures.prune(current_app.config["FAILED_EVENT_RETENTION_DAYS"])
    db.session.commit()
    click.echo(f"pruned {deleted} resolved failed event(s)")


COMMANDS = (webhook_events_command, webhook_replay_command, prune_webhook_events_command)
