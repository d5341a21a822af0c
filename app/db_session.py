"""The session class, and the autocommit engine that requests with a safe method (GET, HEAD, OPTIONS) read on.

Safe methods do not change state (RFC 9110, 9.2.1) beyond the guarded one-statement
``last_used_at`` touch, so they need no multi-statement transaction; without one, psycopg sends
no ``BEGIN`` and no ``ROLLBACK``, two round trips of the three an authenticated read costs.

On a database server the reads run on an engine of their own, created in autocommit
(``AUTOCOMMIT_BIND`` of ``SQLALCHEMY_BINDS``), so with a pool of their own: a worker then holds
up to two connections instead of one. SQLAlchemy's other documented pattern, one pool whose
connections switch level at each checkout ("Maintaining Multiple Isolation Levels for a Single
Engine"), cost 90 us of CPU per checkout, 6% of ``GET /auth/me`` on PostgreSQL (issue 13).

Not on SQLite: pysqlite sends no ``BEGIN`` before a read anyway, so there is no round trip to
save, and SQLite reads and writes on its one engine.
"""
from flask import current_app, has_request_context, request
from flask_sqlalchemy.session import Session as FlaskSession

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
AUTOCOMMIT_BIND = "autocommit"


def autocommit_bind(uri, engine_options):
    """Return the ``SQLALCHEMY_BINDS`` entry of the autocommit engine of the database at ``uri``."""
    return {**engine_options, "url": uri, "isolation_level": "AUTOCOMMIT"}


def autocommit_engine():
    """Return the current app's engine for reads outside a transaction: the autocommit engine of a
    server database, SQLite's one engine."""
    engines = current_app.extensions["sqlalchemy"].engines
    return engines.get(AUTOCOMMIT_BIND) or engines[None]


class Session(FlaskSession):
    """Flask-SQLAlchemy's session, whose every model lives in the one database (no ``__bind_key__``)."""

    def get_bind(self, mapper=None, clause=None, bind=None, **kwargs):
        # Not Flask-SQLAlchemy's lookup of the bind key of each statement's tables: it runs at every
        # execute, ten times per webhook delivery, to find the one engine there is (3% of its CPU).
        if bind is not None:
            return bind
        if has_request_context() and request.method in SAFE_METHODS:
            return autocommit_engine()
        return self._db.engines[None]
