"""The session class: requests with a safe method (GET, HEAD, OPTIONS) read in autocommit mode.

Safe methods do not change state (RFC 9110, 9.2.1) beyond the guarded one-statement
``last_used_at`` touch, so they need no multi-statement transaction; without one, psycopg sends
no ``BEGIN`` and no ``ROLLBACK``, two round trips of the three an authenticated read costs.
This is SQLAlchemy's documented pattern of one engine (one pool) with two isolation levels
("Maintaining Multiple Isolation Levels for a Single Engine").

Not on SQLite: pysqlite sends no ``BEGIN`` before a read anyway, so there is no round trip to
save, while switching the level costs a ``PRAGMA`` and SQLAlchemy's bookkeeping on every checkout
(a third of ``/auth/me``'s time there).
"""
from weakref import WeakKeyDictionary

from flask import has_request_context, request
from flask_sqlalchemy.session import Session as FlaskSession

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_autocommit = WeakKeyDictionary()


def autocommit(engine):
    """Return the autocommit copy of a server database's ``engine`` (same pool); SQLite's ``engine`` itself."""
    if engine.dialect.name == "sqlite":
        return engine
    if engine not in _autocommit:
        _autocommit[engine] = engine.execution_options(isolation_level="AUTOCOMMIT")
    return _autocommit[engine]


def for_request(engine):
    """Return the engine the current request's session runs on: the autocommit copy for a safe method."""
    return autocommit(engine) if has_request_context() and request.method in SAFE_METHODS else engine


class Session(FlaskSession):
    def get_bind(self, mapper=None, clause=None, bind=None, **kwargs):
        return for_request(super().get_bind(mapper=mapper, clause=clause, bind=bind, **kwargs))
