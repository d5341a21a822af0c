"""CLI commands through Flask's runner and as processes (CONTRACT "Command line"); failures are one line."""
import os
import pty
import re
import secrets
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import func, select

from app import create_app
from app.auth import expiry
from app.cli import ServiceCommand, ServiceGroup
from app.extensions import db
from app.models import AccessToken, User
from tests.ports import free_port
from tests.support.accounts import PASSWORD, login
from tests.support.config import BASE_CONFIG
from tests.support.databases import MIGRATIONS, holding_lock
from tests.support.processes import FLASK, ROOT, environ, run
from tests.support.usage import add_customer_user

LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (WARNING|INFO|ERROR) \[")

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_create_user_reads_the_password_from_stdin(app, runner, client):
    result = runner.invoke(args=["create-user", " Grace@Example.com ", "--name", "Grace", "--password-stdin"],
                           input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "<grace@example.com>" in result.output and PASSWORD not in result.output
    assert login(client, email="grace@example.com")["token_type"] == "Bearer"


def one_line_failure(result):
    """Assert the command failed with exit status 1 and one line, no traceback; return the line."""
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: ")
    return line


def _user_count(app):
    with app.app_context():
        return db.session.scalar(select(func.count(User.id)))


@pytest.mark.parametrize("email, password, words", [
    ("g@example.com", "short", ["password", "8"]),
    ("not-an-email", PASSWORD, ["email", "Not a valid email address"]),
    ("g@example.com", "x" * 1025, ["password", "1024"]),
])
def test_create_user_validates_as_registration_does(app, runner, client, email, password, words):
    result = runner.invoke(args=["create-user", email, "--password-stdin"], input=password + "\n")
    line = one_line_failure(result)
    assert all(word in line for word in words), line
    api = client.post("/auth/register", json={"email": email, "password": password})
    assert api.status_code == 422  # the API refuses the same input
    assert _user_count(app) == 0


def test_create_user_with_a_taken_email_is_one_line(app, runner, user):
    result = runner.invoke(args=["create-user", "ADA@example.com", "--password-stdin"], input=PASSWORD + "\n")
    assert one_line_failure(result) == "Error: An account with this email already exists."
    assert _user_count(app) == 1


def test_every_command_fails_in_one_line(app):
    commands = {name: command for name, command in app.cli.commands.items()}
    assert set(commands) >= {"create-user", "prune-tokens", "sync-user", "check-webhook", "reconcile",
                             "webhook-events", "webhook-replay", "prune-webhook-events", "deliver-notifications"}
    assert {"db", "openapi"} <= set(commands)  # the extensions' groups
    assert all(isinstance(command, (ServiceCommand, ServiceGroup)) for command in commands.values())


DATABASE_COMMANDS = [(["create-user", "q@example.com", "--password-stdin"], PASSWORD + "\n"),
                     (["prune-tokens"], None), (["sync-user", "--all"], None), (["sync-user", "1"], None),
                     (["reconcile"], None), (["webhook-events", "--failed"], None),
                     (["db", "upgrade", "--directory", MIGRATIONS], None)]


@pytest.mark.parametrize("args, stdin", DATABASE_COMMANDS)
@pytest.mark.parametrize("url", [f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/nothing",
                                 "sqlite:////nonexistent-directory/app.db"], ids=["postgresql", "sqlite"])
def test_an_unreachable_database_is_one_line(app, make_app, url, args, stdin):
    broken = make_app(SQLALCHEMY_DATABASE_URI=url)
    line = one_line_failure(broken.test_cli_runner().invoke(args=args, input=stdin))
    assert line.startswith("Error: the database failed: ") and len(line) < 400


def test_a_lock_wait_that_runs_out_is_one_line(app, make_app, database_url):
    _make_tokens(app, [(T0 - timedelta(days=9), T0 - timedelta(days=8))])
    impatient = make_app(SQLALCHEMY_ENGINE_OPTIONS={"connect_args": {"options": "-c lock_timeout=200"}}
                         if database_url.startswith("postgresql") else {"connect_args": {"timeout": 0.2}})
    with holding_lock(database_url, "LOCK TABLE personal_access_tokens IN ACCESS EXCLUSIVE MODE"):
        result = impatient.test_cli_runner().invoke(args=["prune-tokens"])
    assert one_line_failure(result) == "Error: the database is busy: a lock wait timed out; try again shortly"


@pytest.mark.usefixtures("migrated_sqlite")
def test_an_unreachable_provider_is_one_line(tmp_path):
    env = environ(tmp_path, PROVIDER_API_BASE=f"http://127.0.0.1:{free_port()}", PROVIDER_MAX_NETWORK_RETRIES="0")
    local = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"]})
    add_customer_user(local, "cus_somewhere", "paying@example.com")
    with local.app_context():
        db.engine.dispose()
    checked = run([*FLASK, "check-webhook"], env)
    assert checked.returncode == 1 and checked.stdout == ""
    assert _failure_lines(checked.stderr) == ["Error: The payment provider could not be reached; try again shortly."]
    synced = run([*FLASK, "sync-user", "--all"], env)
    assert synced.returncode == 1
    assert "paying@example.com: FAILED (ProviderUnavailable: The payment provider could not be reached" in synced.stdout
    assert _failure_lines(synced.stderr) == ["Error: 1 user(s) could not be synced"]


def _failure_lines(stderr):
    """The lines of ``stderr`` that are not the app's log records (one line each) or the progress bar."""
    lines = stderr.strip().splitlines()
    assert "Traceback" not in stderr
    return [line for line in lines if not LOG_RECORD.match(line) and not line.startswith("syncing")]


def _make_tokens(app, specs):
    """Create tokens for one user: ``specs`` is a list of (created_at, expires_at or None)."""
    with app.app_context():
        user = User(email="prune@example.com", password_hash="x")
        db.session.add(user)
        for created, expires in specs:
            db.session.add(AccessToken(user=user, name="auth", token=secrets.token_hex(32),
                                       abilities=[], created_at=created, expires_at=expires))
        db.session.commit()


def _remaining(app):
    with app.app_context():
        return sorted(((t.created_at, t.expires_at) for t in db.session.scalars(select(AccessToken))), key=str)


def test_prune_tokens_keeps_valid_and_recently_expired_tokens(app, runner):
    lifetime = timedelta(minutes=10080)
    keep = [
        (T0, None),                                              # valid under the global lifetime
        (T0 - lifetime - timedelta(minutes=30), None),           # expired 30 minutes ago
        (T0, T0 + timedelta(days=30)),                           # explicit expiry in the future
        (T0 - timedelta(days=1), T0 - timedelta(minutes=59)),    # explicit, expired 59 minutes ago
        (T0 - timedelta(days=20), T0 + timedelta(hours=1)),      # explicit expiry beats the global one
    ]
    drop = [
        (T0 - lifetime - timedelta(hours=2), None),              # global lifetime, expired 2 hours ago
        (T0 - timedelta(days=1), T0 - timedelta(hours=1)),       # explicit, expired exactly an hour ago
        (T0 - timedelta(days=40), T0 - timedelta(days=10)),
    ]
    _make_tokens(app, keep + drop)
    with time_machine.travel(T0, tick=False):
        result = runner.invoke(args=["prune-tokens", "--hours", "1"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "pruned 3 expired token(s)"
    assert _remaining(app) == sorted(keep, key=str)


def test_prune_tokens_honours_the_hours_threshold(app, runner):
    _make_tokens(app, [(T0 - timedelta(days=2), T0 - timedelta(hours=5))])
    with time_machine.travel(T0, tick=False):
        assert runner.invoke(args=["prune-tokens", "--hours", "6"]).output.strip() == "pruned 0 expired token(s)"
        assert runner.invoke(args=["prune-tokens", "--hours", "4"]).output.strip() == "pruned 1 expired token(s)"


def test_prune_works_in_batches(app):
    _make_tokens(app, [(T0 - timedelta(days=9), T0 - timedelta(days=8, minutes=i)) for i in range(25)])
    batches = []
    with app.app_context(), time_machine.travel(T0, tick=False):
        assert expiry.prune(hours=1, batch_size=10, on_batch=batches.append) == 25
        assert db.session.scalar(select(func.count()).select_from(AccessToken)) == 0
    assert batches == [0, 10, 10, 5]  # first the rotated-out tokens (none here), which count 0


def _read_terminal(args, env):
    """Run ``args`` with a pseudo-terminal as its stdin, stdout and stderr; return what it wrote."""
    controller, terminal = pty.openpty()
    process = subprocess.Popen(args, cwd=ROOT, env={**env, "COLUMNS": "120"}, stdin=terminal, stdout=terminal,
                               stderr=terminal)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert process.wait(60) == 0
    return b"".join(chunks).decode()


@pytest.mark.usefixtures("migrated_sqlite")
def test_prune_tokens_shows_a_progress_bar_on_a_terminal_only(tmp_path):
    env = environ(tmp_path)
    local = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": env["DATABASE_URL"]})
    _make_tokens(local, [(T0 - timedelta(days=9), T0 - timedelta(days=8, minutes=i)) for i in range(3)])
    with local.app_context():
        db.engine.dispose()
    piped = run([*FLASK, "prune-tokens", "--hours", "1000000"], env)
    assert (piped.stdout, piped.stderr) == ("pruned 0 expired token(s)\n", "")
    shown = _read_terminal([*FLASK, "prune-tokens"], env)
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "\n", shown).replace("\r", "\n")  # cursor codes, redraws
    lines = [line.strip() for line in plain.splitlines() if line.strip()]
    assert any(line.startswith("pruning") and "100%" in line for line in lines), shown
    assert lines[-1] == "pruned 3 expired token(s)"


def test_prune_leaves_the_transaction_to_its_caller(app):
    _make_tokens(app, [(T0 - timedelta(days=9), T0 - timedelta(days=8, minutes=i)) for i in range(3)])
    with app.app_context(), time_machine.travel(T0, tick=False):
        assert expiry.prune(hours=1, batch_size=2) == 3
        db.session.rollback()
        assert db.session.scalar(select(func.count()).select_from(AccessToken)) == 3
