"""gunicorn settings of the production command: ``gunicorn -c gunicorn.conf.py wsgi:app``.

Every setting can be overridden on the command line (``-w``, ``-b``, ...) or by ``GUNICORN_CMD_ARGS``.
Read by gunicorn's master before it imports the app, which is why the metrics directory is set here.
The master also checks the service's settings once, before any worker starts (``on_starting``): a
bad or missing one, ``PROVIDER_WEBHOOK_SECRET`` and a rate-limit store whose client library is not
installed included, is one line and exit status 1, and so is a rate-limit store in each process's
own memory (``memory://``) with several workers or a PostgreSQL database, unless
``RATELIMIT_ALLOW_MEMORY=true``.
"""
import gc
import glob
import multiprocessing
import os
import sys
import tempfile

bind = os.environ.get("BIND", "127.0.0.1:8000")
# gunicorn's rule of thumb for sync workers: two per core, plus one; WEB_CONCURRENCY overrides it.
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
worker_class = "sync"
# A request may wait on Stripe for PROVIDER_TIMEOUT (5 s) per attempt plus a retry; 30 s covers it
# with room, and a worker stuck longer is killed and replaced.
timeout = 30
# On SIGTERM a worker finishes the request it is in (at most one, sync) before it exits.
graceful_timeout = 30
keepalive = 5
accesslog = "-"
errorlog = "-"
if os.environ.get("LOG_FORMAT", "text").strip().lower() == "json":
    logger_class = "app.observability.logs.GunicornJsonLogger"
    # The path only: a query string may carry what the log must not.
    access_log_format = "%(m)s %(U)s %(s)s %(M)sms"

# prometheus_client picks its multiprocess mode when it is first imported, so the directory is
# named before the app (and prometheus_client) is; every process writes its values there, and
# app.observability.metrics makes it when it does not exist.
if os.environ.get("METRICS_ENABLED", "").strip().lower() in {"1", "true", "yes", "on"}:
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", os.path.join(tempfile.gettempdir(), "subscriptions-metrics"))


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def on_starting(server):
    """Check the settings (one line and exit 1 when one is bad), then clear the old metric files."""
    _check_settings(server)
    _clear_dead_metrics()


def _check_settings(server):
    # Imported here, not at the top: importing the app imports prometheus_client, which must come
    # after PROMETHEUS_MULTIPROC_DIR is set above.
    from app.config import ConfigError, serving_config
    from app.rate_limit import per_process_store, storage_for

    try:
        config = serving_config()
        # Built here and dropped (no connection is made): a store whose client library is missing
        # would otherwise fail in every worker, each with its own line, before the master gives up.
        storage_for(config)
        refused = per_process_store(config, server.cfg.workers)
        if refused:
            raise refused
    except ConfigError as exc:
        sys.exit(f"Error: {exc}")


def _clear_dead_metrics():
    """Delete the metric files of processes no longer running (a previous run's), which would otherwise
    be added to this run's totals. A live process's files stay: the master's own (open since the app
    was imported) and those of a ``flask deliver-notifications`` worker running beside gunicorn."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        for path in glob.glob(os.path.join(directory, "*.db")):
            pid = os.path.basename(path).rsplit("_", 1)[-1].removesuffix(".db")
            if not (pid.isdigit() and _alive(int(pid))):
                os.remove(path)


def child_exit(server, worker):
    """Drop a dead worker's live gauges; its counters stay in the totals (prometheus_client multiprocess)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker):
    """Move everything the worker allocated loading the app to the collector's permanent generation.

    The app's modules, mappers, schemas and the Stripe SDK's types are about 150,000 objects that live
    as long as the worker; left tracked, each full (generation 2) collection walks them all,
    a pause of about 100 ms on a 2-core VM that was the p99 of ``POST /usage/events`` (issue 35). Frozen
    (``gc.freeze``, Python docs "gc"), a full collection walks only what requests allocated since.
    """
    from app import load_for_requests

    load_for_requests()  # what the app builds on first use, frozen with the rest
    gc.collect()  # garbage left from loading is collected first: once frozen, it would never be
    gc.freeze()
