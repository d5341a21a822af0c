"""Read-only snapshots of rows, for a hot read path that one Core statement serves (issue 13).

Every authenticated request reads the token, its user and the user's subscriptions. Loaded as ORM
objects (identity map, row processors, joined-eager adapters) they were half of ``GET /auth/me``'s
CPU. A snapshot is a plain object holding a row's columns as attributes named as on the model,
so the rules written against the models (token expiry, abilities, the entitled plan, the
resources shown) read snapshots unchanged. Snapshots are never written: the ORM models stay the
schema and the write path, and a view that changes a row loads its ORM object.
"""
from app.models.subscription import SubscriptionRules


class Snapshot:
    """The columns of one row as attributes (``Snapshot(id=1, name="auth")``)."""

    def __init__(self, **columns):
        self.__dict__.update(columns)

    def __repr__(self):
        return f"<{type(self).__name__} {self.__dict__.get('id')}>"


class SubscriptionSnapshot(SubscriptionRules, Snapshot):
    """A ``subscriptions`` row, with the model's entitlement rules."""


class UserSnapshot(Snapshot):
    """A ``users`` row; ``subscriptions`` is its ``SubscriptionSnapshot`` list, by id as on ``User``."""


def split_columns(tables):
    """Return the columns of ``tables`` in order, and each table's ``(start, stop, keys)`` in a row of them.

    ``keys`` are the columns' attribute names, so ``dict(zip(keys, row[start:stop]))`` is one
    table's part of a row selected with those columns.
    """
    columns, parts, start = [], [], 0
    for table in tables:
        keys = [column.key for column in table.columns]
        columns += [column.label(f"{table.name}_{column.key}") for column in table.columns]
        parts.append((start, start + len(keys), keys))
        start += len(keys)
    return columns, parts
