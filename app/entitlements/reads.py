"""The check path's read of a billable (issue 44): the row, its subscriptions and what turns features on, in one
statement.

``POST /entitlements/check`` runs on every gated action of the client app, so it reads as ``/auth/me``
does (``app.auth.tokens``): one Core statement built once, rows into snapshots, no ORM objects. The
billable is read with its subscriptions (an outer join, one row each), its Stripe Entitlements'
``lookup_keys`` and whether an override is active; the overrides themselves are read only then (rare).
Nothing is cached between requests: a plan change, a Stripe feature or an override counts from the
next check on every worker and host (CONTRACT "Entitlements": never stale).
"""
from sqlalchemy import and_, bindparam, exists, or_, select

from app.extensions import db
from app.models import BILLABLE_KINDS, Subscription
from app.models.entitlement import EntitlementOverride, EntitlementVersion
from app.models.snapshots import Snapshot, split_columns
from app.models.stripe_entitlement import StripeEntitlementSummary


class EntitledSubscription(Snapshot):
    """A ``subscriptions`` row as the entitled plan (``app.billing.plans``), its period and ``as_of`` read it."""

    COLUMNS = ("id", "provider_status", "provider_price", "ends_at", "default_payment_method", "provider_created_at",
               "created_at", "current_period_end", "provider_updated_at")


class BillableSnapshot(Snapshot):
    """A user's or organisation's row as the check path reads it: ``id``, ``provider_id``, ``subscriptions``
    (``EntitledSubscription`` list, by id), ``lookup_keys`` (Stripe's active features, a list), ``overridden``
    (whether an override may be active) and ``version`` (its ``entitlement_versions`` row's, or ``None``);
    ``model`` is its ORM class, which ``load`` reads it as."""

    COLUMNS = ("id", "provider_id")

    @property
    def kind(self):
        return self.model.kind

    @property
    def billable_key(self):
        """``"<kind>:<id>"``, as ``Billable.billable_key``."""
        return f"{self.kind}:{self.id}"

    def owner_columns(self):
        """``{"<kind>_id": id}``, as ``Billable.owner_columns``."""
        return {f"{self.kind}_id": self.id}

    def load(self):
        """The ORM row (for what writes or notifies: a threshold's alert), read in the session."""
        return db.session.get(self.model, self.id)


_SUBSCRIPTIONS, _OVERRIDES = Subscription.__table__, EntitlementOverride.__table__
_STRIPE, _VERSIONS = StripeEntitlementSummary.__table__, EntitlementVersion.__table__


def active_override_condition(now):
    """The SQL condition of an override in force at ``now`` (a bind parameter or a datetime)."""
    return and_(_OVERRIDES.c.revoked_at.is_(None), or_(_OVERRIDES.c.until.is_(None), _OVERRIDES.c.until > now))


def _statement(model):
    table = model.__table__
    columns, parts = split_columns([(table, BillableSnapshot), (_SUBSCRIPTIONS, EntitledSubscription)])
    lookup_keys = select(_STRIPE.c.lookup_keys).where(_STRIPE.c.billable == bindparam("key")).scalar_subquery()
    overridden = exists().where(_OVERRIDES.c.billable == bindparam("key"),
                                active_override_condition(bindparam("now")))
    version = select(_VERSIONS.c.version).where(_VERSIONS.c.billable == bindparam("key")).scalar_subquery()
    statement = (select(*columns, lookup_keys.label("lookup_keys"), overridden.label("overridden"),
                        version.label("version"))
                 .select_from(table.outerjoin(_SUBSCRIPTIONS, _SUBSCRIPTIONS.c[f"{model.kind}_id"] == table.c.id))
                 .where(table.c.id == bindparam("id")).order_by(_SUBSCRIPTIONS.c.id))
    return statement, parts


_READS = {model.kind: (model, *_statement(model)) for model in BILLABLE_KINDS}


def billable_snapshot(kind, ref, now):
    """The ``BillableSnapshot`` of ``kind`` (``"user"``, ``"organization"``) and id ``ref`` at ``now``, or ``None``.

    ``ref`` is as ``CustomerRefSchema`` loads it (an integer for a user, a string for an organisation). One statement
    on the session's connection (the transaction the consume then writes in).
    """
    model, statement, ((start, stop, keys), (sub_start, sub_stop, sub_keys)) = _READS[kind]
    rows = db.session.connection().execute(statement, {"id": ref, "key": f"{kind}:{ref}", "now": now}).all()
    if not rows:
        return None
    first, sub_id = rows[0], sub_start + sub_keys.index("id")
    subscriptions = [EntitledSubscription(**dict(zip(sub_keys, row[sub_start:sub_stop], strict=True)))
                     for row in rows if row[sub_id] is not None]
    return BillableSnapshot(**dict(zip(keys, first[start:stop], strict=True)), model=model,
                            subscriptions=subscriptions, lookup_keys=first.lookup_keys or [],
                            overridden=first.overridden, version=first.version)
