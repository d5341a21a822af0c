"""Fixtures of the reliability suite: a real gunicorn, signed delivery with provider-style retries, counts.

``gunicorn`` runs ``wsgi:app`` with four sync workers on the session's test database (SQLite or the
PostgreSQL of ``TEST_DATABASE_URL``) and the in-process emulator as its provider. ``tally`` counts
what the suite did (events delivered, duplicates, reorderings, faults, inputs, lost updates); at the
end of the session the counts are appended to ``bench-results/reliability.json``, which
``scripts/reliability_report.py`` prints for docs/testing.md. A run says whether it was the whole suite
(``make test``, ``pytest tests/reliability``) or a selection, and which arguments pytest had; under
pytest-xdist the workers of one run add up into one entry.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.signing import WEBHOOK_SECRET
from tests.support.config import BASE_CONFIG
from tests.support.processes import ROOT
from tests.support.reliability import TALLY, WORKERS, Gunicorn

RESULTS = ROOT / "bench-results" / "reliability.json"
KEPT_RUNS = 50

# The keys of TALLY that hold the largest figure a test saw, not a count: workers' runs take the maximum.
MAXIMA = frozenset({"provider_fault_max_ms", "login_timing_median_diff_us", "brute_force_guesses_before_429",
                    "brute_force_guesses_before_429_shared", "refresh_race_winners_max", "smtp_outage_ms"})
_OUTCOMES = Counter()
_STARTED = time.monotonic()
# Node ids of the reliability tests: selected by this session, run (any report), deselected (-k, -m, ...).
_SELECTED, _REPORTED, _DESELECTED = set(), set(), set()


@pytest.fixture
def tally():
    return TALLY


def _reliability(nodeid):
    return "tests/reliability/" in nodeid.replace(os.sep, "/")


def pytest_collection_finish(session):
    _SELECTED.update(item.nodeid for item in session.items if _reliability(item.nodeid))


def pytest_deselected(items):
    _DESELECTED.update(item.nodeid for item in items if _reliability(item.nodeid))


def pytest_runtest_logreport(report):
    if _reliability(report.nodeid):
        _REPORTED.add(report.nodeid)
        if report.when == "call":
            _OUTCOMES[report.outcome] += 1


def whole_selection(config):
    """Whether this session selected every reliability test: the folder (or one above it) was named as
    a whole and none was deselected."""
    here = Path(__file__).resolve().parent
    named = [Path(config.invocation_params.dir, arg).resolve() for arg in config.args if "::" not in arg]
    return any(here.is_relative_to(path) for path in named) and not _DESELECTED


def whole_suite(run):
    """Whether ``run`` ran every reliability test: all selected, and each selected one ran (no ``-x``
    stop, no interruption), on whichever xdist worker."""
    return run["whole_selection"] and run["ran"] >= run["selected"]


def _read_runs():
    if RESULTS.exists():
        try:
            return json.loads(RESULTS.read_text()).get("runs", [])
        except (ValueError, AttributeError):
            pass  # a damaged file must not fail the test run; it is only a report
    return []


def _added_up(earlier, run):
    """One xdist worker's ``run`` added to what the run's other workers wrote before it (zero counts kept)."""
    def add(a, b):
        return {key: (max if key in MAXIMA else sum)((a.get(key, 0), b.get(key, 0)))
                for key in sorted(a.keys() | b.keys())}

    added = {**run, "seconds": max(earlier["seconds"], run["seconds"]), "tests": add(earlier["tests"], run["tests"]),
             "counts": add(earlier["counts"], run["counts"]), "ran": earlier["ran"] + run["ran"],
             "whole_selection": earlier["whole_selection"] and run["whole_selection"]}
    return {**added, "whole_suite": whole_suite(added)}


def pytest_sessionfinish(session, exitstatus):
    if not _OUTCOMES:
        return  # the reliability suite did not run here (a -k, a path elsewhere, or another xdist worker)
    url = os.environ.get("TEST_DATABASE_URL") or "sqlite"
    run = {
        "finished_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "database": url.split(":", 1)[0].split("+", 1)[0],
        "seconds": round(time.monotonic() - _STARTED, 1),
        "tests": dict(_OUTCOMES),
        "whole_selection": whole_selection(session.config),
        # Under xdist every worker selects every test and runs its share: the shares are added up.
        "selected": len(_SELECTED), "ran": len(_SELECTED & _REPORTED),
        "selection": " ".join(session.config.invocation_params.args),
        "counts": dict(sorted(TALLY.items())),
    }
    run["whole_suite"] = whole_suite(run)
    # Each xdist worker finishes a session of its own; the run's id is shared by its workers.
    run_id = getattr(session.config, "workerinput", {}).get("testrunuid")
    RESULTS.parent.mkdir(exist_ok=True)
    with open(RESULTS.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # workers finish at the same moment
        runs = _read_runs()
        if run_id is not None:
            run["run_id"] = run_id
            if runs and runs[-1].get("run_id") == run_id:
                run = _added_up(runs.pop(), run)
        RESULTS.write_text(json.dumps({"runs": (runs + [run])[-KEPT_RUNS:]}, indent=2) + "\n")


@pytest.fixture
def gunicorn(make_app, database_url, emulator, request, tmp_path):
    """Start gunicorn on the test database and the emulator; yield a ``Gunicorn``; stop it afterwards.

    ``make_app`` is used first so that the emulator is reset before and the tables are emptied
    after the test. Prices made by the ``prices`` fixture are mapped in ``PROVIDER_PLANS``; with the
    ``redis_url`` fixture, the workers share the login rate limit through the suite's own Redis.
    """
    make_app()
    extra_env = dict(getattr(request, "param", {}))  # indirect parametrisation adds settings
    if "redis_url" in request.fixturenames:
        extra_env["RATELIMIT_STORAGE_URI"] = request.getfixturevalue("redis_url")
    plans = dict(BASE_CONFIG["PROVIDER_PLANS"])
    if "prices" in request.fixturenames:
        plans.update({price: plan for plan, price in request.getfixturevalue("prices").items()})
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "SECRET_KEY": BASE_CONFIG["SECRET_KEY"],
        "PROVIDER_API_BASE": emulator.url,
        "PROVIDER_API_KEY": "sk_test_x",
        "PROVIDER_PLANS": json.dumps(plans),
        "PROVIDER_MAX_NETWORK_RETRIES": "0",
        # Test-sized Argon2 costs, as in tests/conftest.py; the timing test uses production's.
        "PASSWORD_HASH_TIME_COST": str(BASE_CONFIG["PASSWORD_HASH_TIME_COST"]),
        "PASSWORD_HASH_MEMORY_COST": str(BASE_CONFIG["PASSWORD_HASH_MEMORY_COST"]),
        "LOG_LEVEL": "DEBUG",
        # gunicorn reads ./gunicorn.conf.py, whose start-up check refuses four workers on memory://
        # unless meant: here it is (the brute-force test pins what per-worker counts let through).
        "RATELIMIT_ALLOW_MEMORY": "true",
        **extra_env,
    }
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-w", str(WORKERS), "-k", "sync", "-b", f"127.0.0.1:{port}",
             "--preload", "--timeout", "60", "--graceful-timeout", "5", "--log-level", "debug",
             "--access-logfile", "-", "--error-logfile", "-", "wsgi:app"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = Gunicorn(f"http://127.0.0.1:{port}", process, log)
    try:
        server.wait_healthy()
        yield server
    finally:
        # Nothing is left to finish, and even gunicorn's quick shutdown (SIGINT) took 2-3 s of every
        # such test while each worker's interpreter wound down: the master and its workers (a process
        # group of their own) are killed at once.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
