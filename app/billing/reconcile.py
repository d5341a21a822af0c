"""Scheduled reconciliation: sync every billable whose billing state may have drifted from the provider's
(issue 11; CONTRACT "Changes to the fifth round": organisations too).

Webhooks are the only push from the provider; one that never arrives (retries given up after three
days, an endpoint disabled, delivery paused) leaves a billable's state wrong until someone syncs it.
``reconcile`` finds the users at risk and every organisation with a customer (its seats may have
drifted at any time, ``seats``), and runs the same ``sync`` as ``flask sync-user`` / ``flask
sync-org`` on each, in one loop.
"""
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import and_, func, or_, select

from app.billing.seats import set_seats
from app.billing.statuses import DUNNING_STATUSES, TERMINAL_STATUSES, VALID_STATUSES
from app.billing.sync import sync_billable
from app.extensions import db
from app.models import BILLABLE_KINDS, Subscription, User
from app.timeutil import utcnow

BATCH_SIZE = 100
# Statuses that wait on the customer or on dunning: the next event changes them, and may be lost.
UNSETTLED_STATUSES = frozenset({"incomplete"}) | DUNNING_STATUSES


@dataclass
class Counts:
    """Counts of one kind of billable in a run: ``checked``; ``drifted`` (the sync changed its state, or an
    organisation's seats were not its ``seat_count``); ``fixed`` (drifted and committed: 0 in a dry run);
    ``failed`` (the sync raised)."""

    checked: int = 0
    drifted: int = 0
    fixed: int = 0
    failed: int = 0

    def __str__(self):
        return f"checked {self.checked}, drifted {self.drifted}, fixed {self.fixed}, failed {self.failed}"


@dataclass
class ReconcileResult:
    """One run: ``by_kind``, the ``Counts`` of each billable model of ``BILLABLE_KINDS``. ``synced`` holds
    ``(label, SyncResult)`` of each billable synced (``changes`` those it changed), ``seats`` the
    ``seats.SeatDrift`` of each organisation whose seats were (or, in a dry run, would be) set back,
    ``failures`` ``(label, exception)`` pairs; in the order met. ``label`` is the billable's ``label``."""

    dry_run: bool = False
    by_kind: dict = field(default_factory=lambda: {model: Counts() for model in BILLABLE_KINDS})
    synced: list = field(default_factory=list)
    seats: list = field(default_factory=list)
    failures: list = field(default_factory=list)

    @property
    def changes(self):
        """``(label, SyncResult)`` of each billable the sync changed."""
        return [(name, synced) for name, synced in self.synced if synced.changed]

    def counts(self, billable):
        """The ``Counts`` of ``billable``'s kind."""
        return self.by_kind[type(billable)]

    @property
    def failed(self):
        """Billables of any kind whose sync raised."""
        return sum(counts.failed for counts in self.by_kind.values())

    def summary(self):
        """The command's last line: ``users: checked N, ...; organisations: checked N, ...``."""
        return "; ".join(f"{model.noun}s: {counts}" for model, counts in self.by_kind.items())

    def not_synced(self):
        """The one-line failure of a run some billables of which could not be synced: ``1 user(s) and 2
        organisation(s) could not be synced``."""
        kinds = [f"{counts.failed} {model.noun}(s)" for model, counts in self.by_kind.items() if counts.failed]
        return f"{' and '.join(kinds)} could not be synced"


class DryRunProvider:
    """The provider for a dry run: every read passes through; the writes a sync can make (promoting the paying
    card to the customer's default, voiding the invoice of a seat held on an ended subscription) are skipped."""

    def __init__(self, provider):
        self._provider = provider

    def __getattr__(self, name):
        return getattr(self._provider, name)

    def set_default_payment_method(self, customer_id, payment_method_id):
        """Skip the write; answer as the write would have (the new default, named by id: the caller reads
        it), so the local mirror of the card is computed as if it had happened."""
        return {"id": customer_id, "invoice_settings": {"default_payment_method": payment_method_id}}

    def void_invoice(self, invoice_id):
        """Skip the write: nothing is read from its answer."""


def _may_have_drifted(now, stale_days):
    """The condition on a subscription row that puts its user up for reconciliation."""
    return or_(
        Subscription.provider_status.in_(UNSETTLED_STATUSES),
        # The provider ends a cancelled subscription at its period end; its deletion event is the news.
        and_(Subscription.provider_status.in_(VALID_STATUSES), Subscription.ends_at <= now),
        # Nothing confirmed it for a while (events and syncs both move provider_updated_at); ended
        # subscriptions never change again at the provider, so they are not worth a call.
        and_(Subscription.provider_status.not_in(TERMINAL_STATUSES),
             Subscription.provider_updated_at < now - timedelta(days=stale_days)),
    )


def candidates(stale_days, now=None, model=User):
    """Return the query of the ids of ``model``'s billables whose state may have drifted, ordered by id.

    Those with a provider customer and a subscription that is ``incomplete``, ``past_due`` or
    ``unpaid``, still valid past its ``ends_at`` (a grace period that has ended), or not
    confirmed by an event or a sync for ``stale_days`` days (``RECONCILE_STALE_DAYS``); for a ``seated``
    kind every one with a customer: a seat quantity changed in the Dashboard is news no subscription row
    shows, so each is checked.
    """
    if model.seated:
        return model.with_customer()
    now = now or utcnow()
    return (select(model.id).join(Subscription, getattr(Subscription, f"{model.kind}_id") == model.id)
            .where(model.provider_id.is_not(None), _may_have_drifted(now, stale_days))
            .group_by(model.id).order_by(model.id))


def to_reconcile(stale_days):
    """The ``(model, query of ids)`` pairs ``reconcile`` goes through: each kind's ``candidates``, in
    ``BILLABLE_KINDS``' order, chosen by the service's clock at one instant."""
    now = utcnow()
    return [(model, candidates(stale_days, now, model)) for model in BILLABLE_KINDS]


def every_customer():
    """The ``(model, query of ids)`` pairs of every billable with a provider customer (``flask sync-user --all``)."""
    return [(model, model.with_customer()) for model in BILLABLE_KINDS]


def count(queries):
    """Return how many billables ``queries`` (``(model, query of ids)`` pairs) name."""
    return sum(db.session.scalar(select(func.count()).select_from(query.subquery())) for _, query in queries)


def _batches(query, column):
    after = None
    while True:
        page = query if after is None else query.where(column > after)
        ids = db.session.scalars(page.limit(BATCH_SIZE)).all()
        if not ids:
            return
        yield ids
        after = ids[-1]


def each_billable(queries):
    """Yield the billable of each id ``queries`` (``(model, query of ids)`` pairs) name, ``BATCH_SIZE`` ids at a
    time, in order."""
    for model, query in queries:
        for ids in _batches(query, model.id):
            for billable_id in ids:
                yield model.by_id(billable_id)
            db.session.expunge_all()  # a batch's billables are done with; keep memory flat


def sync_each(provider, billables, dry_run=False, seats=False, on_billable=None):
    """Sync each of ``billables`` (users and organisations, any order) through ``sync.sync_billable``, with
    ``seats`` an organisation's seats set back to its ``seat_count`` too (``set_seats``); return
    a ``ReconcileResult``.

    One at a time, each in its own transaction, committed here: a sync locks the billable's row, and
    one long transaction would hold every lock until the end, while one billable's failure would undo
    everyone's repair. A dry run rolls each back and makes no provider write. ``on_billable(billable)``
    is called after each (a progress bar).
    """
    result = ReconcileResult(dry_run=dry_run)
    syncing = DryRunProvider(provider) if dry_run else provider
    for billable in billables:
        _sync_one(syncing, billable, result, seats)
        if on_billable:
            on_billable(billable)
    return result


def reconcile(provider, stale_days, dry_run=False, on_billable=None):
    """Sync every billable of ``to_reconcile`` and set organisations' seats back (``sync_each``); return a
    ``ReconcileResult``. Users are chosen by the service's clock (UTC) at the start."""
    return sync_each(provider, each_billable(to_reconcile(stale_days)), dry_run, seats=True, on_billable=on_billable)


def _sync_one(provider, billable, result, seats):
    counts, name = result.counts(billable), billable.label
    counts.checked += 1
    try:
        synced = sync_billable(provider, billable)
        drift = set_seats(provider, billable, result.dry_run) \
            if seats and billable.seated else None
    except Exception as exc:  # one billable's failure must not stop the others
        db.session.rollback()
        counts.failed += 1
        result.failures.append((name, exc))
        return
    result.synced.append((name, synced))
    if drift is not None:
        result.seats.append(drift)
    drifted = synced.changed or drift is not None
    counts.drifted += drifted
    if result.dry_run:
        db.session.rollback()
    else:
        db.session.commit()
        counts.fixed += drifted
