"""Read-only snapshots of rows, for a hot read path that one Core statement serves (issue 13).

Every authenticated request reads the token, its user and the user's subscriptions. Loaded as ORM
objects (identity map, row processors, joined-eager adapters) they were half of ``GET /auth/me``'s
CPU. A snapshot is a plain object holding a row's columns as attributes named as on the model,
so the rules written against the models (token expiry, abilities, the entitled plan, the
resources shown) read snapshots unchanged. Snapshots are never written: the ORM models stay the
schema and the write path, and a view that changes a row loads its ORM object.

Each snapshot class names the columns it holds (``COLUMNS``): what the readers of an
authenticated request use, no more. Every column selected costs CPU on every request (psycopg
builds a column description per column each time a result is read, and SQLAlchemy converts each
value): the whole three rows, 41 columns, cost 467 us a statement against 282 us for 3. Reading a
column a snapshot does not hold raises ``AttributeError``; a reader that needs one adds it here.
"""
class Snapshot:
    """The columns of one row as attributes (``Snapshot(id=1, name="auth")``); a subclass names
    the ones it holds in ``COLUMNS``."""

    def __init__(self, **columns):
        self.__dict__.update(columns)

    def __repr__(self):
        return f"<{type(self).__name__} {self.__dict__.get('id')}>"


class TokenSnapshot(Snapshot):
    """A ``personal_access_tokens`` row: what expiry, abilities, refresh and revocation read."""

    COLUMNS = ("id", "user_id", "name", "token", "abilities", "family_id", "last_used_at", "expires_at",
               "created_at")


class SubscriptionSnapshot(Snapshot):
    """A ``subscriptions`` row: what the plan and the resource read (``app.billing.statuses``' rules read it as
    they read the model)."""

    COLUMNS = ("id", "provider_id", "provider_status", "provider_price", "cancel_at_period_end",
               "current_period_end", "ends_at", "provider_created_at", "created_at", "quantity", "trial_ends_at",
               "default_payment_method", "pending_price", "pending_quantity", "pending_expires_at", "discount",
               "scheduled_change")


class UserSnapshot(Snapshot):
    """A ``users`` row (what the "User" resource shows); ``subscriptions`` is its ``SubscriptionSnapshot``
    list, by id as on ``User``; ``has_organizations`` whether it is a member of any organisation."""

    COLUMNS = ("id", "email", "email_verified_at", "name", "pm_type", "pm_last_four")


def split_columns(parts):
    """Return the columns of ``parts`` (``[(table, snapshot class)]``) in order, and each part's
    ``(start, stop, keys)`` in a row of them.

    ``keys`` are the snapshot's ``COLUMNS``, so ``dict(zip(keys, row[start:stop]))`` is one table's
    part of a row selected with those columns.
    """
    columns, spans, start = [], [], 0
    for table, snapshot in parts:
        keys = list(snapshot.COLUMNS)
        columns += [table.c[key].label(f"{table.name}_{key}") for key in keys]
        spans.append((start, start + len(keys), keys))
        start += len(keys)
    return columns, spans
