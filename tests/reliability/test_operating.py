"""The production command as docs/operating.md gives it: ``gunicorn -c gunicorn.conf.py wsgi:app`` with two
workers, metrics on and JSON logs: counters add both workers' requests, every log line is JSON."""
import json
import os
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.ports import free_port
from tests.signing import WEBHOOK_SECRET
from tests.support.accounts import PASSWORD, bearer
from tests.support.config import BASE_CONFIG
from tests.support.processes import ROOT
from tests.support.reliability import TALLY, Gunicorn

WORKERS = 2
TOKEN = "scrape-token-for-the-reliability-test"


@pytest.fixture
def production(make_app, database_url, emulator, tmp_path):
    """gunicorn started with the repository's gunicorn.conf.py, two workers, metrics and JSON logs."""
    make_app()
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
           "SECRET_KEY": BASE_CONFIG["SECRET_KEY"], "PROVIDER_API_BASE": emulator.url, "PROVIDER_API_KEY": "sk_test_x",
           "PASSWORD_HASH_TIME_COST": str(BASE_CONFIG["PASSWORD_HASH_TIME_COST"]),
           "PASSWORD_HASH_MEMORY_COST": str(BASE_CONFIG["PASSWORD_HASH_MEMORY_COST"]),
           "METRICS_ENABLED": "true", "METRICS_TOKEN": TOKEN, "LOG_FORMAT": "json",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics"), "WEB_CONCURRENCY": str(WORKERS),
           "BIND": f"127.0.0.1:{port}", "RATELIMIT_ALLOW_MEMORY": "true"}
    (tmp_path / "metrics").mkdir()
    (tmp_path / "metrics" / "counter_999999.db").write_bytes(b"stale file of an earlier run")
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "wsgi:app"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = Gunicorn(f"http://127.0.0.1:{port}", process, log)
    try:
        server.wait_healthy(workers=WORKERS)
        yield server, tmp_path / "metrics"
    finally:
        process.send_signal(signal.SIGTERM)  # graceful, as a deploy stops it
        try:
            process.wait(35)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def counter(server, name, **labels):
    body = server.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"}).text
    return sum(sample.value for family in text_string_to_metric_families(body) for sample in family.samples
               if sample.name == name and labels.items() <= sample.labels.items())


def test_metrics_add_up_both_workers_requests(production):
    server, directory = production
    assert not (directory / "counter_999999.db").exists(), "a previous run's file is cleaned at start"
    sent, served_by = 0, set()
    # Which worker accepts is the kernel's choice: on a busy machine one may take a whole round.
    for _ in range(10):
        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(lambda _: requests.get(f"{server.url}/health/ready", timeout=10).status_code,
                                     range(60)))
        sent += 60
        assert statuses == [200] * 60
        records = [json.loads(line) for line in server.log.read_text().splitlines() if line.strip()]
        served_by = {r["pid"] for r in records if r.get("logger") == "app.request" and r["path"] == "/health/ready"}
        if len(served_by) == WORKERS:
            break
    TALLY["metrics_requests_two_workers"] += sent
    assert served_by == set(server.workers()) and len(served_by) == WORKERS, "both workers answered some"
    # Whichever worker answers the scrape, it reports every worker's requests.
    totals = {counter(server, "http_requests_total", endpoint="/health/ready", status="200") for _ in range(6)}
    assert totals == {sent}
    assert server.get("/metrics").status_code == 401  # the token is required


def test_a_dead_workers_counts_stay_and_the_logs_are_json(production):
    server, _ = production
    for _ in range(10):
        assert server.get("/health/ready").status_code == 200
    assert server.post("/auth/register", json={"email": "ops@example.com", "password": PASSWORD}).status_code == 201
    token = server.post("/auth/login", json={"email": "ops@example.com", "password": PASSWORD}).json()
    assert server.get("/auth/me?access_token=" + token["access_token"], headers=bearer(token)).status_code == 200
    server.kill_workers()
    server.wait_healthy(workers=WORKERS)
    assert counter(server, "http_requests_total", endpoint="/health/ready", status="200") == 10
    TALLY["faults_injected"] += 1
    lines = [line for line in server.log.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line, gunicorn's included, is one JSON object
    access = [r for r in records if r["logger"] == "gunicorn.access" and r["path"] == "/health/ready"]
    assert len(access) >= 10 and {"time", "level", "request_id", "method", "status", "duration_ms"} <= set(access[0])
    app_ids = {r["request_id"] for r in records if r["logger"] == "app.request"}
    assert {r["request_id"] for r in access} <= app_ids, "gunicorn's line and the app's share the request id"
    for secret in (PASSWORD, token["access_token"].split("|")[1], TOKEN):
        assert secret not in server.log.read_text()  # not even from a query string


def dockerfile():
    """Return ``(env, copied paths, cmd)`` of the Dockerfile's ``ENV``, ``COPY`` and ``CMD`` instructions."""
    instructions = (ROOT / "Dockerfile").read_text().replace("\\\n", " ").splitlines()
    env, copied, cmd = {}, [], None
    for line in instructions:
        keyword, _, rest = line.partition(" ")
        if keyword == "ENV":
            env.update(part.split("=", 1) for part in rest.split())
        elif keyword == "COPY":
            copied += rest.split()[:-1]
        elif keyword == "CMD":
            cmd = json.loads(rest)
    return env, copied, cmd


@pytest.mark.parametrize("metrics", [True, False], ids=["metrics", "no-metrics"])
def test_the_image_files_and_command_serve(database_url, make_app, tmp_path, metrics):
    # No Docker engine on this machine: what the image holds is copied here, and its commands run
    # with its environment (the installed packages are this virtualenv's, the same pinned set).
    make_app()
    env, copied, cmd = dockerfile()
    image = tmp_path / "image"
    image.mkdir()
    for name in copied:
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy)(source, image / name)
    port = free_port()
    # The image's metrics folder, as in a fresh container: named, not made.
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/")
    env.update(BIND=f"127.0.0.1:{port}", PROMETHEUS_MULTIPROC_DIR=str(tmp_path / env["PROMETHEUS_MULTIPROC_DIR"][1:]),
               WEB_CONCURRENCY="2", DATABASE_URL=database_url, PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET,
               SECRET_KEY=BASE_CONFIG["SECRET_KEY"], RATELIMIT_ALLOW_MEMORY="true",
               **({"METRICS_ENABLED": "1"} if metrics else {}))
    env = {"PATH": os.environ["PATH"], **env}
    # The Dockerfile header's first command.
    upgrade = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=image, env=env,
                             capture_output=True, text=True, timeout=120)
    assert upgrade.returncode == 0, upgrade.stderr[-3000:]
    assert cmd[:3] == ["gunicorn", "-c", "gunicorn.conf.py"]
    log = tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", *cmd], cwd=image, stdout=out, stderr=subprocess.STDOUT,
                                   env=env)
    server = Gunicorn(f"http://127.0.0.1:{port}", process, log)
    try:
        server.wait_healthy(workers=2)
        assert server.get("/health/ready").json()["status"] == "ok"
        assert server.get("/metrics").status_code == (200 if metrics else 404)
        assert json.loads(log.read_text().splitlines()[0])["logger"] == "gunicorn.error"  # LOG_FORMAT=json
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(35)
