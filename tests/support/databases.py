"""The migrations folder, a lock held from a second connection and a short lock wait, for the database tests."""
import os
import sqlite3
from contextlib import contextmanager

from sqlalchemy import create_engine, text

MIGRATIONS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "migrations")


def one_second_lock_wait(database_url):
    """Engine options under which the service's sessions wait 1 s for a lock: PostgreSQL's ``lock_timeout``
    (an operator's setting; the default waits for the lock), SQLite's busy timeout (the default is 5 s)."""
    if database_url.startswith("postgresql"):
        return {"connect_args": {"options": "-c lock_timeout=1000"}}
    return {"connect_args": {"timeout": 1}}


@contextmanager
def holding_lock(database_url, postgres_statement):
    """Hold a lock from a second connection until the block ends: on PostgreSQL what
    ``postgres_statement`` takes, on SQLite the database-wide write lock."""
    if database_url.startswith("postgresql"):
        engine = create_engine(database_url)
        holder = engine.connect()
        holder.execute(text(postgres_statement))
    else:
        engine = None
        holder = sqlite3.connect(database_url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.rollback()
        holder.close()
        if engine is not None:
            engine.dispose()
