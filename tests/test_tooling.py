"""The developer's tools as the README and docs/testing.md give them: plain ``pytest``, ``make test`` without a Redis of
one's own, ``pip install .`` in a clone."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parent.parent


def run(args, **kwargs):
    return subprocess.run(args, cwd=kwargs.pop("cwd", ROOT), capture_output=True, text=True, timeout=300, **kwargs)


def own_database_environ(**changes):
    """This environment without TEST_DATABASE_URL: a nested session would empty this session's PostgreSQL."""
    return {**{k: v for k, v in os.environ.items() if k != "TEST_DATABASE_URL"}, **changes}


@pytest.mark.deep_only
def test_plain_pytest_finds_the_repositorys_packages():
    # The virtualenv's pytest script, unlike ``python -m pytest``, puts no working directory on sys.path.
    script = str(Path(sys.executable).with_name("pytest"))
    result = run([script, "tests/test_config.py", "-q", "-p", "no:cacheprovider"], env=own_database_environ())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def test_the_redis_tests_use_a_server_of_their_own(redis_service, redis_url):
    info = redis.Redis.from_url(redis_url).info("server")
    assert info["process_id"] == redis_service.process.pid and info["tcp_port"] == redis_service.port


@pytest.mark.deep_only
def test_without_redis_server_the_redis_tests_are_skipped_saying_why():
    # Only the virtualenv's commands on the PATH: no redis-server, whatever listens on 127.0.0.1:6379.
    env = own_database_environ(PATH=str(Path(sys.executable).parent))
    test = "tests/test_health.py::test_ready_checks_the_rate_limit_store_and_the_smtp_server_when_configured"
    result = run([sys.executable, "-m", "pytest", test, "-p", "no:cacheprovider"], env=env)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "1 skipped" in result.stdout and "redis-server is not installed" in result.stdout, result.stdout[-3000:]


@pytest.mark.deep_only
def test_pip_install_leaves_nothing_untracked(tmp_path):
    """``pip install .`` (docs/operating.md's Production) builds in the source tree: git ignores what it leaves."""
    clone = tmp_path / "clone"
    files = run(["git", "ls-files", "--cached", "--others", "--exclude-standard"]).stdout.splitlines()
    for name in files:
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    for git in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", *git], cwd=clone, check=True)
    install = run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(tmp_path / "site"),
                   "."], cwd=clone)
    assert install.returncode == 0, install.stderr[-3000:]
    status = run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=clone).stdout.splitlines()
    assert [line for line in status if line.startswith("??")] == []


@pytest.mark.deep_only
def test_every_stripe_call_type_checks_against_the_pinned_sdk(tmp_path):
    """``make lint``'s mypy, here too so that CI proves it: each Stripe call's params are typed with the
    pinned SDK's ``stripe.params`` TypedDicts, so a shape real Stripe refuses at the pinned API version
    (issue 26: resume's ``billing_cycle_anchor`` as a string) fails."""
    mypy = [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache")]
    importing = sorted(str(path.relative_to(ROOT)) for path in (ROOT / "app").rglob("*.py")
                       if re.search(r"^(import|from) stripe\b", path.read_text(), re.MULTILINE))
    assert "app/billing/stripe_meters.py" in importing and "app/billing/stripe_provider.py" in importing
    checked = run([*mypy, *importing])
    assert checked.returncode == 0, checked.stdout
    broken = tmp_path / "stripe_provider.py"
    source = (ROOT / "app/billing/stripe_provider.py").read_text()
    broken.write_text(source.replace('{"type": "now"}', '"now"'))
    result = run([*mypy, "--config-file", str(ROOT / "setup.cfg"), str(broken)])
    assert result.returncode == 1 and "billing_cycle_anchor" in result.stdout, result.stdout
