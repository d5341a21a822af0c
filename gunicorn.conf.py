"""gunicorn's settings file, read from the working directory by default (``-c`` names another).

Checks the configuration once, in the master, before any worker starts: a bad or missing
setting is one line and exit status 1, and a per-process rate-limit store shared by several
workers is a warning. Workers, bind address and the rest stay on the command line.
"""
import sys

from app.config import ConfigError, serving_config


def on_starting(server):
    try:
        config = serving_config()
    except ConfigError as exc:
        sys.exit(f"Error: {exc}")
    if server.cfg.workers > 1 and config["RATELIMIT_STORAGE_URI"].startswith("memory://"):
        # memory:// counts in each worker's own memory: N workers let a guesser have N times
        # the login limit.
        server.log.warning("RATELIMIT_STORAGE_URI is memory:// with %d workers: each worker counts its "
                           "own requests, so the rate limits allow %d times their value; use redis:// "
                           "(README \"Production\")", server.cfg.workers, server.cfg.workers)
