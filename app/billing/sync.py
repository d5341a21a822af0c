"""``sync``: rebuild a billable's (a user's or an organisation's) billing state from the provider (SPEC 1, SPEC 4
"Synchronization entry point")."""
from dataclasses import dataclass, field
from datetime import datetime

from flask import current_app
from sqlalchemy import inspect

from app.billing import objects, payment_methods, plans, schedules, state
from app.billing.statuses import TERMINAL_STATUSES
from app.extensions import db
from app.models.seat import SeatChange, held_on
from app.signals import billable_synced

# Columns that are not the billable's billing state: keys, and times every write moves (a live read
# is "now", so provider_updated_at changes on every sync). The password hash is never shown.
_NOT_STATE = frozenset({"id", "user_id", "subscription_id", "created_at", "updated_at", "provider_updated_at",
                        "password_hash"})


@dataclass(frozen=True)
class FieldChange:
    """One stored field a sync changed. ``field`` is a column of the billable (``plan``, ``pm_last_four``)
    or ``<subscription id>.<column>`` / ``<subscription item id>.<column>``; ``old`` is ``None`` for a
    row the sync created, ``new`` for one it deleted."""

    field: str
    old: object
    new: object

    def __str__(self):
        return f"{self.field}: {_shown(self.old)} -> {_shown(self.new)}"


def _shown(value):
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value)


@dataclass
class SyncResult:
    """What a sync changed for one billable, in the stored rows: one ``FieldChange`` per field that moved."""

    billable_key: str  # ``Billable.billable_key``: "user:<id>" or "organization:<id>"
    email: str
    changes: list = field(default_factory=list)

    @property
    def changed(self):
        return bool(self.changes)

    def change_text(self):
        """Return the changes as one line, ``"field: old -> new; ..."``, or ``"unchanged"`` (command output)."""
        return "; ".join(map(str, self.changes)) or "unchanged"


def _columns(row, prefix=""):
    return {f"{prefix}{attr.key}": getattr(row, attr.key)
            for attr in inspect(row).mapper.column_attrs if attr.key not in _NOT_STATE}


def snapshot(billable):
    """Return every stored billing field of the billable, subscriptions and items as ``{field: value}``.

    Read from the mapped columns, not a list kept by hand, so a column added to these tables is
    reported by ``sync`` (and ``flask sync-user``) without more code.
    """
    fields = _columns(billable)
    for subscription in billable.subscriptions:
        fields.update(_columns(subscription, f"{subscription.provider_id}."))
        for item in subscription.items:
            fields.update(_columns(item, f"{item.provider_id}."))
    return fields


def diff(before, after):
    """Return the ``FieldChange`` list between two ``snapshot``s, in the order of their fields."""
    names = list(before) + [name for name in after if name not in before]
    return [FieldChange(name, before.get(name), after.get(name))
            for name in names if before.get(name) != after.get(name)]


def sync_billable(provider, billable):
    """Pull every subscription of the billable's customer and write it as the webhook path would.

    The live state counts as "now", so webhooks older than it that arrive later change nothing.
    Local subscriptions the provider no longer has are deleted; then the same plan and payment
    method logic as the listeners runs. A seat held on a subscription Stripe ended ends as it is written
    (``state.apply_subscription``) and its invoice is voided (``_void_ended_holds``), as the listener of
    ``customer.subscription.deleted`` does: that event may never have come. Returns a ``SyncResult`` listing every
    stored field that changed. The caller commits. Raises ``ProviderUnavailable`` and ``ProviderRejected``.
    """
    billable.lock()
    before = snapshot(billable)
    if billable.provider_id:
        live = provider.list_subscriptions(billable.provider_id)
        held = _held_invoices(billable, live)
        as_of = state.live_as_of()
        for obj in live:
            # Its Stripe schedule too (CONTRACT "Plan changes at the period's end"): one read when it has one.
            schedules.refresh(provider, state.apply_subscription(billable, obj, as_of), obj)
        _void_ended_holds(provider, live, held)
        live_ids = {obj["id"] for obj in live}
        for subscription in list(billable.subscriptions):
            if subscription.provider_id not in live_ids:
                db.session.delete(subscription)
        db.session.flush()
        db.session.expire(billable, ["subscriptions"])
        _sync_payment_method(provider, billable, {obj["id"]: obj for obj in live})
    plans.recompute_plan(billable)
    # What else is kept from Stripe (its Entitlements' active features: app.listeners.sync_stripe_features) is
    # no column of these rows: its change is added to the report.
    answers = billable_synced.send(current_app._get_current_object(), provider=provider, billable=billable)
    features = [FieldChange(*change) for _, changes in answers for change in changes]
    db.session.flush()
    return SyncResult(billable.billable_key, billable.stripe_email, diff(before, snapshot(billable)) + features)


def _held_invoices(billable, live):
    """``{invoice: subscription id}`` of the seats held on ``live``'s subscriptions before this sync writes them
    (only an organisation holds seats)."""
    if not billable.seated:
        return {}
    return dict(db.session.execute(held_on(billable.id, [obj["id"] for obj in live]).with_only_columns(
        SeatChange.invoice, SeatChange.provider_subscription)).all())


def _void_ended_holds(provider, live, held):
    """Void each invoice of ``held`` whose subscription Stripe ended (in ``live``): cancelling leaves it open
    (https://docs.stripe.com/billing/subscriptions/cancel), and paid on Stripe's page it would charge a seat nobody
    can take (``app.organizations.seats.void_ended_hold``, the webhook's way). Only a hold this sync ended, so a
    later sync calls Stripe no more."""
    ended = {obj["id"] for obj in live if obj.get("status") in TERMINAL_STATUSES}
    for invoice, subscription_id in held.items():
        if invoice and subscription_id in ended:
            provider.void_invoice(invoice)


def _sync_payment_method(provider, billable, live_by_id):
    entitled = plans.entitled_subscription(billable)
    paying = objects.ref_id(live_by_id[entitled.provider_id].get("default_payment_method")) if entitled else None
    if paying:
        payment_methods.promote(provider, billable, paying)
    else:
        payment_methods.refresh_from_customer(provider, billable, provider.retrieve_customer(billable.provider_id))
