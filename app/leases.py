"""Leasing due rows of a work queue to one worker: the notification outbox (``app.notifications.outbox``)
and the usage ledger (``app.usage.delivery``) claim their rows so.

A claim moves the rows' ``next_attempt_at`` forward by a lease, in one statement: ``SELECT ... FOR
UPDATE SKIP LOCKED`` in a CTE of the ``UPDATE`` lets workers on PostgreSQL claim side by side without
waiting on each other (a CTE runs once; the same ``SELECT`` as an ``IN`` subquery may run again per
row, skipping on past its ``LIMIT``). SQLite has no row locks but runs one ``UPDATE`` at a time, and
the ``UPDATE`` checks the row is still due, so no two workers claim one row there either. A worker
that dies keeps its rows until the lease ends; then another takes them.
"""
from sqlalchemy import select, update

from app.extensions import db


def lease_due(model, pending, now, limit, lease):
    """Lease up to ``limit`` rows of ``model`` whose ``status`` is ``pending`` and ``next_attempt_at`` is
    at or before ``now`` (UTC), oldest due first, for ``lease`` (a ``timedelta``); return their ids.

    ``model`` has ``id``, ``status`` and ``next_attempt_at`` columns. The caller commits, which ends the
    claim's transaction and its row locks.
    """
    due = (select(model.id)
           .where(model.status == pending, model.next_attempt_at <= now)
           .order_by(model.next_attempt_at, model.id)
           .limit(limit)
           .with_for_update(skip_locked=True)
           .cte("due"))
    return db.session.scalars(
        update(model)
        .where(model.id == due.c.id, model.status == pending, model.next_attempt_at <= now)
        .values(next_attempt_at=now + lease)
        .returning(model.id)
        .execution_options(synchronize_session=False)).all()
