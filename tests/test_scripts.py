"""``make run``'s stack (scripts/dev.py), ``make demo`` (scripts/demo.py) and ``make bench``
(scripts/bench.py), run as the Makefile runs them."""
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from scripts.demo import Demo
from scripts.dev import Stack
from tests.depth import budget
from tests.ports import free_port


def offset(emulator_url):
    return requests.get(f"{emulator_url}/_emulator/clock", timeout=10).json()["offset_seconds"]


def test_make_run_remembers_me_and_make_demo_leaves_the_clock_as_it_found_it(tmp_path, capsys):
    stack = Stack(port=free_port(), emulator_port=free_port(), database_url=f"sqlite:///{tmp_path / 'run.db'}",
                  smtp_port=free_port(), maildir=tmp_path / "mail",
                  env_file=tmp_path / "dev.env")
    with stack as env:
        base = env["SERVICE_URL"]
        # The README's curl session: remember_me gives a 30-day token under make run.
        body = {"email": "ada@example.com", "password": "correct horse", "name": "Ada"}
        assert requests.post(f"{base}/auth/register", json=body, timeout=10).status_code == 201
        login = {"email": body["email"], "password": body["password"], "remember_me": True}
        token = requests.post(f"{base}/auth/login", json=login, timeout=10).json()
        expires_at = datetime.fromisoformat(token["expires_at"].replace("Z", "+00:00"))
        assert abs(expires_at - (datetime.now(UTC) + timedelta(days=30))) < timedelta(minutes=1)

        requests.post(f"{env['EMULATOR_URL']}/_emulator/clock/advance", json={"seconds": 100}, timeout=10)
        Demo(env).run()
        assert "Demo complete." in capsys.readouterr().out
        assert offset(env["EMULATOR_URL"]) == 100


class FailingDemo(Demo):
    def steps(self):
        requests.post(f"{self.emulator}/_emulator/clock/advance", json={"seconds": 32 * 86400}, timeout=10)
        raise SystemExit("expected 200, got 500")


def test_make_demo_puts_the_clock_back_when_it_fails(emulator, tmp_path):
    env = {"SERVICE_URL": "http://127.0.0.1:9", "PROVIDER_API_BASE": emulator.url, "PROVIDER_PLANS": "{}",
           "MAILDIR": str(tmp_path)}
    emulator.reset()
    with pytest.raises(SystemExit, match="expected 200"):
        FailingDemo(env).run()
    assert offset(emulator.url) == 0


def test_the_emulator_clock_only_rewinds(emulator):
    emulator.reset()
    emulator.advance(50)
    refused = requests.post(f"{emulator.url}/_emulator/clock/rewind", json={"offset_seconds": 60}, timeout=10)
    assert refused.status_code == 400 and offset(emulator.url) == 50
    assert requests.post(f"{emulator.url}/_emulator/clock/rewind", json={}, timeout=10).json()["offset_seconds"] == 0


def test_make_bench_runs_every_row(tmp_path):
    """``make bench``'s script, shortened, on the suite's database kind: ``--smoke`` (one row of each
    kind) under ``make test``, ``--quick`` with 1 s rows (every row) under ``make test-deep``.

    Its exit status is 1 while a target is missed, which a 1 s row on a busy test machine says
    nothing about; what this proves is that every row was measured with no failed request.
    """
    kind = "postgres" if os.environ.get("TEST_DATABASE_URL", "").startswith("postgresql") else "sqlite"
    results = tmp_path / "bench.json"
    shortened = budget(quick=["--smoke"], deep=["--quick", "--duration", "1"])
    run = subprocess.run([sys.executable, "-m", "scripts.bench", *shortened, "--db", kind,
                          "--results", str(results)], cwd=Path(__file__).resolve().parent.parent,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stderr[-4000:]
    rows = [line for line in run.stdout.splitlines() if line.startswith(f"| {kind} |")]
    every_kind = ("minimal Flask app", "`GET /auth/me`, valid token", "webhook ingest, lifecycle mix",
                  "`flask prune-tokens`", "`POST /subscription/intent`", "`POST /auth/login`")
    every_row = ("`GET /_bench/bare`", "personal token scoped", "other tokens", "one webhook delivery at a time")
    for measured in budget(quick=every_kind, deep=every_kind + every_row):
        assert any(measured in row for row in rows), (measured, run.stdout)
    assert all(row.split(" | ")[5] in {"0", ""} for row in rows), run.stdout
    webhook = json.loads(results.read_text())["results"][kind]["webhook"]
    # Each delivery answered 200 is in the ledger once (the bench counts a mismatch as errors).
    assert webhook["ok"] > 0 and webhook["ledger_rows"] == webhook["ok"], webhook
