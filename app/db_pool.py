"""Pooled connections to a database server, checked without a round trip (issue 13).

SQLAlchemy's ``pool_pre_ping`` sends ``SELECT 1`` at every checkout: a second round trip on every
request (11% of ``GET /auth/me`` on PostgreSQL in a profile). What it guards against is handled so:

- A connection the server ended (a restart, a failover, ``pg_terminate_backend``): the server sends
  a FATAL error and closes the socket, so the socket of an idle connection is readable. At
  checkout, ``_server_closed`` looks at the socket (a ``select`` with no wait, no round trip) and
  reads what is there with libpq; a closed one raises ``DisconnectionError``, which makes the pool
  drop it and connect anew for the same checkout (SQLAlchemy, "Disconnect Handling - Pessimistic",
  custom checkout events).
- A connection cut silently (a firewall or proxy idle timeout): ``pool_recycle`` replaces every
  connection older than ``POOL_RECYCLE_SECONDS`` at checkout, below the common idle timeouts.
- A connection lost while a request uses it: SQLAlchemy invalidates it and every older pooled
  connection; the request answers 503 ``service_unavailable`` with ``Retry-After``
  (``app.error_handlers``) and the next request connects afresh.
"""
import select

from sqlalchemy import event, exc
from sqlalchemy.engine import Engine

# Below the idle timeouts of common middleboxes (AWS NLB 350 s) and far below PostgreSQL's own
# (none by default); reconnecting every five minutes per pooled connection costs nothing measurable.
POOL_RECYCLE_SECONDS = 300
# What can be waiting on an idle connection: notices, parameter changes, then the FATAL and the
# end of the stream. Reading is bounded so a socket that stays readable cannot hold a checkout.
_MAX_READS = 4


def server_engine_options():
    """Engine options for a database server: no pre-ping, connections recycled after 5 minutes."""
    return {"pool_pre_ping": False, "pool_recycle": POOL_RECYCLE_SECONDS}


def _server_closed(pgconn):
    """Whether libpq connection ``pgconn`` (psycopg's ``pq.PGconn``) was ended by the server; no round trip."""
    # Imported here: only a psycopg connection gets here, and a service on SQLite (the suite's ``flask``
    # processes) would otherwise import psycopg at start-up for nothing.
    import psycopg
    from psycopg import pq

    try:
        for _ in range(_MAX_READS):
            if pgconn.status != pq.ConnStatus.OK:
                return True
            if not select.select([pgconn.socket], [], [], 0)[0]:
                return False
            pgconn.consume_input()
    except psycopg.OperationalError:
        return True  # the end of the stream (or a socket libpq already knows is gone)
    return False


@event.listens_for(Engine, "checkout")
def _discard_closed(dbapi_connection, connection_record, connection_proxy):
    pgconn = getattr(dbapi_connection, "pgconn", None)
    if pgconn is not None and _server_closed(pgconn):
        raise exc.DisconnectionError("the server closed the connection while it was idle in the pool")
