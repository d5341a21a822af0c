"""``flask entitlements show|grant|revoke|announce-expired|prune``: support overrides and the ledger's upkeep
(CONTRACT "Overrides")."""
import getpass
from datetime import UTC, datetime

import click
from flask import current_app
from flask.cli import with_appcontext

from app.cli import ServiceCommand, ServiceGroup
from app.entitlements import overrides, service, summary
from app.extensions import db
from app.timeutil import isoformat_z, utcnow


@click.group("entitlements", cls=ServiceGroup)
def entitlements_group():
    """Show a customer's entitlements; grant or revoke support overrides."""


def _who():
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name (a container's numeric user)
        return "unknown"


def customer_options(command):
    """``--user ID`` / ``--organization ID``, exactly one, passed as ``customer`` (``{"user": id}`` ...)."""
    command = click.option("--organization", "organization_id", help="An organisation's id (org_...).")(command)
    return click.option("--user", "user_id", type=int, help="A user's id.")(command)


def _billable(user_id, organization_id):
    if (user_id is None) == (organization_id is None):
        raise click.UsageError("give --user ID or --organization ID")
    return service.billable_of({"user": user_id} if user_id is not None else {"organization": organization_id})


def _line(name, feature):
    if feature["type"] == "boolean":
        return f"{name}\t{'on' if feature['enabled'] else 'off'}\t{feature['source']}"
    limit = "unlimited" if feature["limit"] is None else feature["limit"]
    return (f"{name}\t{feature['used']} used, {feature['reserved']} reserved of {limit}\t{feature['source']}\t"
            f"resets {feature['reset_at'] or 'never'}")


@entitlements_group.command("show", cls=ServiceCommand)
@customer_options
@with_appcontext
def show_command(user_id, organization_id):
    """Print the plan, each feature and every override (who, when, why)."""
    billable = _billable(user_id, organization_id)
    state = summary.features(billable, utcnow())
    click.echo(f"{billable.billable_key}\tplan {state['plan']}\tas of {state['as_of'] or 'never confirmed'}")
    for name, feature in state["features"].items():
        click.echo(_line(name, feature))
    for row in overrides.history(billable):
        value = f"limit {row.limit}" if row.limit is not None else f"enabled {str(row.enabled).lower()}"
        ended = f"revoked {isoformat_z(row.revoked_at)} by {row.revoked_by}" if row.revoked_at else (
            f"until {isoformat_z(row.until)}" if row.until else "no end")
        click.echo(f"override {row.id}\t{row.feature}\t{value}\tby {row.granted_by} {isoformat_z(row.created_at)}\t"
                   f"{ended}\t{row.reason}")


def _until(value):
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"not an ISO-8601 time: {value!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@entitlements_group.command("grant", cls=ServiceCommand)
@customer_options
@click.argument("feature")
@click.option("--limit", type=click.IntRange(0, 2**63 - 1), help="A quota's units per period.")
@click.option("--enabled", type=click.BOOL, help="A boolean feature: true or false.")
@click.option("--until", help="ISO-8601 end (UTC unless an offset is given); default no end.")
@click.option("--reason", required=True, help="Why: kept with the override.")
@click.option("--by", default=_who, show_default="your login name", help="Who grants it.")
@with_appcontext
def grant_command(user_id, organization_id, feature, limit, enabled, until, reason, by):
    """Override a feature for a customer (source "override") until --until or a revoke."""
    billable = _billable(user_id, organization_id)
    try:
        row = overrides.grant(billable, feature, limit, enabled, _until(until) if until else None, reason, by)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    db.session.commit()
    click.echo(f"override {row.id}: {feature} for {billable.billable_key} granted by {row.granted_by}")


@entitlements_group.command("revoke", cls=ServiceCommand)
@customer_options
@click.argument("feature")
@click.option("--by", default=_who, show_default="your login name", help="Who revokes it.")
@with_appcontext
def revoke_command(user_id, organization_id, feature, by):
    """End a customer's overrides of a feature: the plan decides again."""
    billable = _billable(user_id, organization_id)
    try:
        count = overrides.revoke(billable, feature, by)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    db.session.commit()
    click.echo(f"revoked {count} override{'' if count == 1 else 's'} of {feature} for {billable.billable_key}")


@entitlements_group.command("announce-expired", cls=ServiceCommand)
@with_appcontext
def announce_expired_command():
    """Tell the client app (``entitlements.updated``) of each customer whose override's --until passed; from cron
    every minute. Each customer in a transaction of its own; an override is announced once."""
    now, customers, count = utcnow(), 0, 0
    for billable in overrides.expired_billables(now):
        count += overrides.announce_expiry(billable, now)
        db.session.commit()
        customers += 1
    click.echo(f"announced {count} expired override{'' if count == 1 else 's'} of {customers} "
               f"customer{'' if customers == 1 else 's'}")


@entitlements_group.command("prune", cls=ServiceCommand)
@with_appcontext
def prune_command():
    """Forget consume identifiers and closed reservations older than USAGE_RETENTION_DAYS (at least 35)."""
    pruned = overrides.prune(current_app.config["USAGE_RETENTION_DAYS"])
    db.session.commit()
    click.echo(f"pruned {pruned} consume and reservation record{'' if pruned == 1 else 's'}")


COMMANDS = (entitlements_group,)
