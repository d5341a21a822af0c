"""gunicorn settings of the production command: ``gunicorn -c gunicorn.conf.py wsgi:app``.

Every setting can be overridden on the command line (``-w``, ``-b``, ...) or by ``GUNICORN_CMD_ARGS``.
Read by gunicorn's master before it imports the app, which is why the metrics directory is set here.
"""
import glob
import multiprocessing
import os
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
# named and made before the app (and prometheus_client) is; every process writes its values there.
if os.environ.get("METRICS_ENABLED", "").strip().lower() in {"1", "true", "yes", "on"}:
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", os.path.join(tempfile.gettempdir(), "subscriptions-metrics"))
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def on_starting(server):
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
