"""``make run``'s stack (scripts/dev.py) and ``make demo`` (scripts/demo.py), run as the Makefile runs them."""
from datetime import UTC, datetime, timedelta

import pytest
import requests

from scripts.demo import Demo
from scripts.dev import Stack
from tests.reliability.support import free_port


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
