"""Start-up as operators run it: ``flask --app wsgi`` and gunicorn with ``gunicorn.conf.py``, as processes.

A bad setting is one line naming the variable and a non-zero exit; commands that serve no
webhook do not need ``PROVIDER_WEBHOOK_SECRET``; several workers or PostgreSQL on ``memory://`` stop start-up
unless ``RATELIMIT_ALLOW_MEMORY=true``.
"""
import gc
import runpy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.ports import free_port
from tests.signing import WEBHOOK_SECRET
from tests.support.events import deliver, load_event
from tests.support.processes import FLASK, ROOT, environ, run


def test_db_upgrade_and_create_user_need_no_webhook_secret(tmp_path):
    env = environ(tmp_path)
    upgrade = run([*FLASK, "db", "upgrade"], env)
    assert upgrade.returncode == 0, upgrade.stderr
    created = run([*FLASK, "create-user", "ops@example.com", "--password-stdin"], env, input="long enough pw\n")
    assert created.returncode == 0, created.stderr
    assert run([*FLASK, "prune-tokens"], env).stdout.strip() == "pruned 0 expired token(s)"


def test_webhook_without_secret_answers_503_naming_it(make_app):
    client = make_app(PROVIDER_WEBHOOK_SECRET="").test_client()
    response = deliver(client, load_event("01_"))
    assert response.status_code == 503
    assert response.json["error"]["code"] == "service_unavailable"
    assert "PROVIDER_WEBHOOK_SECRET" in response.json["error"]["message"]


def test_a_bad_setting_is_one_line_and_a_non_zero_exit(tmp_path):
    result = run([*FLASK, "db", "upgrade"], environ(tmp_path, AUTH_TOKEN_EXPIRATION="a week"))
    assert result.returncode == 4  # gunicorn's "App failed to load": its master stops
    assert result.stderr.strip().splitlines() == ["Error: AUTH_TOKEN_EXPIRATION must be a whole number, got 'a week'"]


@pytest.mark.parametrize("url, refused", [("mysql://app@db/subscriptions", "got mysql://"),
                                         ("not a url", "got something that is not a URL")])
def test_a_database_url_of_another_database_is_one_line_not_no_such_command(tmp_path, url, refused):
    result = run([*FLASK, "prune-tokens"], environ(tmp_path, DATABASE_URL=url))
    assert result.returncode == 4
    assert result.stderr.splitlines() == ["Error: DATABASE_URL must be a postgresql:// (psycopg) or sqlite:/// URL, "
                                          f"e.g. postgresql://app@db/subscriptions; {refused}"]


@pytest.mark.parametrize("args, line", [
    (["prune-tokens", "--nope"], "Error: No such option: --nope (see 'flask prune-tokens --help')"),
    (["prune-token"], "Error: No such command 'prune-token' (see 'flask --help')"),
    (["db", "upgrad"], "Error: No such command 'upgrad' (see 'flask db --help')"),
    (["webhook-replay"], "Error: name at least one EVENT_ID, or pass --failed (see 'flask webhook-replay --help')"),
])
def test_a_usage_error_is_one_line_and_exit_status_2(tmp_path, args, line):
    result = run([*FLASK, *args], environ(tmp_path))
    # Started as ``python -m flask``, which click names so in the hint.
    line = line.replace("'flask", "'python -m flask")
    assert (result.returncode, result.stderr.splitlines(), result.stdout) == (2, [line], "")


def gunicorn(tmp_path, env, workers):
    port = free_port()
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "-w", str(workers), "-b",
             f"127.0.0.1:{port}", "--error-logfile", "-", "wsgi:app"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}", log


def test_gunicorn_refuses_to_start_without_the_webhook_secret(tmp_path):
    process, _, log = gunicorn(tmp_path, environ(tmp_path), workers=2)
    assert process.wait(30) == 1
    errors = [line for line in log.read_text().splitlines() if "[INFO]" not in line]
    assert errors == ["Error: PROVIDER_WEBHOOK_SECRET is not set: the service cannot verify provider webhooks "
                      "without it (several secrets may be given, comma-separated, while rotating)"]


def test_a_rate_limit_store_without_its_client_library_stops_the_master_once(tmp_path):
    env = environ(tmp_path, PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET, RATELIMIT_STORAGE_URI="memcached://127.0.0.1:11211")
    process, _, log = gunicorn(tmp_path, env, workers=3)
    assert process.wait(30) == 1
    lines = log.read_text().splitlines()
    assert [line for line in lines if "[INFO]" not in line] == [
        "Error: RATELIMIT_STORAGE_URI cannot be used: 'pymemcache' prerequisite not available. "
        "See https://limits.readthedocs.io/en/stable/storage.html#supported-versions for more details."]
    assert not any("Booting worker" in line for line in lines)


def _serve_and_stop(tmp_path, env, workers):
    process, url, log = gunicorn(tmp_path, env, workers)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if requests.get(url + "/health", timeout=2).status_code == 200:
                    break
            except (requests.ConnectionError, requests.Timeout):  # not listening yet, or a worker still loading
                pass
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        # Several requests, so that every worker has loaded the app; a worker's first request loads what serving
        # needs (the Stripe SDK: gunicorn.conf.py), which took over 2 s on a loaded 2-core VM.
        for _ in range(4):
            requests.get(url + "/health", timeout=15)
    finally:
        process.terminate()
        process.wait(30)
    return log.read_text()


MEMORY_REFUSED = ("Error: RATELIMIT_STORAGE_URI is memory:// and {reason}, so the login, register and Stripe-call "
                  "limits let several times their value through: use redis://host:6379, or set "
                  "RATELIMIT_ALLOW_MEMORY=true if per-process limits are meant")


@pytest.mark.parametrize(("workers", "database", "reason"), [
    (2, None, "2 gunicorn workers each count their own requests"),
    (1, "postgresql://app@127.0.0.1:1/subscriptions",
     "a postgresql database may serve several hosts, each counting its own requests"),
], ids=["two-workers", "postgresql"])
def test_a_per_process_limit_store_stops_the_master_once(tmp_path, workers, database, reason):
    env = environ(tmp_path, PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET, **({"DATABASE_URL": database} if database else {}))
    process, _, log = gunicorn(tmp_path, env, workers=workers)
    assert process.wait(30) == 1
    lines = log.read_text().splitlines()
    assert [line for line in lines if "[INFO]" not in line] == [MEMORY_REFUSED.format(reason=reason)]
    assert not any("Booting worker" in line for line in lines)


@pytest.mark.usefixtures("migrated_sqlite")
def test_several_workers_on_memory_start_when_it_is_meant(tmp_path):
    env = environ(tmp_path, PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET, RATELIMIT_ALLOW_MEMORY="true")
    log = _serve_and_stop(tmp_path, env, workers=2)
    assert "RATELIMIT_STORAGE_URI" not in log
    assert log.count("Booting worker") == 2


@pytest.mark.usefixtures("migrated_sqlite")
def test_one_worker_on_sqlite_or_a_shared_store_starts(tmp_path):
    env = environ(tmp_path, PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET)
    assert "RATELIMIT_STORAGE_URI" not in _serve_and_stop(tmp_path, env, workers=1)
    # A shared store, named only: starting and answering /health never connect to it.
    shared = {**env, "RATELIMIT_STORAGE_URI": f"redis://127.0.0.1:{free_port()}/0"}
    assert "RATELIMIT_STORAGE_URI" not in _serve_and_stop(tmp_path, shared, workers=2)


def test_a_metrics_folder_that_does_not_exist_is_made(tmp_path):
    folder = tmp_path / "not" / "yet" / "metrics"
    upgrade = run([*FLASK, "db", "upgrade"], environ(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(folder)))
    assert upgrade.returncode == 0, upgrade.stderr
    assert folder.is_dir()


def test_a_metrics_folder_that_cannot_be_made_is_one_line_naming_the_variable(tmp_path):
    (tmp_path / "a-file").write_text("")
    env = environ(tmp_path, PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "a-file" / "metrics"),
                  PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET, LOG_FORMAT="json")
    line = f"Error: PROMETHEUS_MULTIPROC_DIR '{tmp_path / 'a-file' / 'metrics'}' cannot be created: Not a directory"
    upgrade = run([*FLASK, "db", "upgrade"], env)
    assert upgrade.returncode == 1 and upgrade.stderr.splitlines() == [line]
    # gunicorn's master meets it loading the JSON logger class, before any worker starts.
    process, _, log = gunicorn(tmp_path, env, workers=2)
    assert process.wait(30) == 1
    assert log.read_text().splitlines() == [line]


def test_a_worker_freezes_what_loading_the_app_allocated():
    # gunicorn calls post_worker_init in each worker once the app is loaded: from then on a full
    # collection skips those objects (the ~100 ms pauses that were POST /usage/events' p99).
    settings = runpy.run_path(str(Path(__file__).resolve().parent.parent / "gunicorn.conf.py"))
    gc.unfreeze()  # the suite's own freeze (tests/conftest.py), put back below
    assert gc.get_freeze_count() == 0
    try:
        settings["post_worker_init"](None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()
        gc.freeze()
