"""The service run as its own process (``flask`` commands, gunicorn) from the repository's root."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


FLASK = [sys.executable, "-m", "flask", "--app", "wsgi"]


def environ(tmp_path, **settings):
    """The test process's environment without the service's settings, plus ``settings``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PROVIDER_", "RATELIMIT_", "AUTH_", "DATABASE_URL", "FLASK_"))}
    return {**env, "DATABASE_URL": f"sqlite:///{tmp_path / 'app.db'}", "SECRET_KEY": "test secret key", **settings}


def run(args, env, **kwargs):
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, **kwargs)


def stop_workers(workers, logs, seconds=30):
    """SIGTERM the worker processes, as a deploy stops them, and return their exit codes once each has finished
    its batch. One still running after ``seconds`` has every thread's stack printed into its log (SIGUSR1,
    ``app.stopping``), is killed, and fails the caller with that log: what it was doing, not only that it hung.
    ``logs``: each worker's log file (its standard output and error), in the order of ``workers``."""
    for worker in workers:
        worker.send_signal(signal.SIGTERM)
    stuck = []
    for worker, log in zip(workers, logs, strict=True):
        try:
            worker.wait(seconds)
        except subprocess.TimeoutExpired:
            worker.send_signal(signal.SIGUSR1)
            time.sleep(1)
            worker.kill()
            worker.wait(10)
            stuck.append(log.read_text()[-5000:])
    assert not stuck, stuck
    return [worker.returncode for worker in workers]
