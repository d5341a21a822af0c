"""Scheduled reconciliation: sync every user whose billing state may have drifted from the provider's (issue 11).

Webhooks are the only push from the provider; one that never arrives (retries given up after three
days, an endpoint disabled, delivery paused) leaves a user's state wrong until someone syncs them.
``reconcile`` finds the users at risk and runs the same ``sync`` as ``flask sync-user`` on each.
"""
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import and_, func, or_, select

from app.billing.statuses import DUNNING_STATUSES, TERMINAL_STATUSES, VALID_STATUSES
from app.billing.sync import sync_billable
from app.extensions import db
from app.models import Subscription, User
from app.timeutil import utcnow

BATCH_SIZE = 100
# Statuses that wait on the customer or on dunning: the next event changes them, and may be lost.
UNSETTLED_STATUSES = frozenset({"incomplete"}) | DUNNING_STATUSES


@dataclass
class ReconcileResult:
    """Counts of one run: users ``checked``; ``drifted`` (the sync changed their state); ``fixed``
    (drifted and committed: 0 in a dry run); ``failed`` (the sync raised). ``changes`` holds the
    ``SyncResult`` of each drifted user, ``failures`` ``(email, exception)`` pairs."""

    dry_run: bool = False
    checked: int = 0
    drifted: int = 0
    fixed: int = 0
    failed: int = 0
    changes: list = field(default_factory=list)
    failures: list = field(default_factory=list)


class DryRunProvider:
    """The provider for a dry run: every read passes through; the one write a sync can make
    (promoting the paying card to the customer's default) is skipped."""

    def __init__(self, provider):
        self._provider = provider

    def __getattr__(self, name):
        return getattr(self._provider, name)

    def sync(self, billable):
        """The contract's one sync, run on this wrapper so that its provider calls come here."""
        return sync_billable(self, billable)

    def set_default_payment_method(self, customer_id, payment_method_id):
        """Skip the write; answer as the write would have (the new default, named by id: the caller reads
        it), so the local mirror of the card is computed as if it had happened."""
        return {"id": customer_id, "invoice_settings": {"default_payment_method": payment_method_id}}


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


def candidates(stale_days, now=None):
    """Return the query of the ids of users whose state may have drifted, ordered by id.

    Users with a provider customer and a subscription that is ``incomplete``, ``past_due`` or
    ``unpaid``, still valid past its ``ends_at`` (a grace period that has ended), or not
    confirmed by an event or a sync for ``stale_days`` days (``RECONCILE_STALE_DAYS``).
    """
    now = now or utcnow()
    return (select(User.id).join(Subscription, Subscription.user_id == User.id)
            .where(User.provider_id.is_not(None), _may_have_drifted(now, stale_days))
            .group_by(User.id).order_by(User.id))


def _batches(query):
    after = 0
    while True:
        ids = db.session.scalars(query.where(User.id > after).limit(BATCH_SIZE)).all()
        if not ids:
            return
        yield ids
        after = ids[-1]


def reconcile(provider, stale_days, dry_run=False, on_user=None):
    """Sync every candidate user (see ``candidates``) through ``provider.sync``; return a ``ReconcileResult``.

    Users are read in batches of ``BATCH_SIZE`` ids and synced one at a time, each in its own
    transaction, committed here: a sync locks the user's row, and one long transaction would hold
    every lock until the end, while one user's failure would undo everyone's repair. A dry run
    rolls each user back and makes no provider write. ``on_user(user_id)`` is called after each
    user (a progress bar). Candidates are chosen by the service's clock (UTC) at the start.
    """
    result = ReconcileResult(dry_run=dry_run)
    query = candidates(stale_days)
    syncing = DryRunProvider(provider) if dry_run else provider
    for ids in _batches(query):
        for user_id in ids:
            _reconcile_user(syncing, db.session.get(User, user_id), result)
            if on_user:
                on_user(user_id)
        db.session.expunge_all()  # a batch's users are done with; keep memory flat
    return result


def count_candidates(stale_days):
    """Return how many users ``reconcile`` would check now."""
    return db.session.scalar(select(func.count()).select_from(candidates(stale_days).subquery()))


def _reconcile_user(provider, user, result):
    result.checked += 1
    email = user.email
    try:
        synced = provider.sync(user)
    except Exception as exc:  # one user's failure must not stop the others
        db.session.rollback()
        result.failed += 1
        result.failures.append((email, exc))
        return
    if synced.changed:
        result.drifted += 1
        result.changes.append(synced)
    if result.dry_run:
        db.session.rollback()
    else:
        db.session.commit()
        result.fixed += synced.changed
