"""CLI commands through Flask's runner: create-user and prune-tokens (CONTRACT "Command line")."""
import secrets
from datetime import UTC, datetime, timedelta

import time_machine
from sqlalchemy import func, select

from app.auth import tokens
from app.extensions import db
from app.models import AccessToken, User
from tests.conftest import PASSWORD, login

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def test_create_user_reads_the_password_from_stdin(app, runner, client):
    result = runner.invoke(args=["create-user", "Grace@Example.com", "--name", "Grace", "--password-stdin"],
                           input=PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "grace@example.com" in result.output and PASSWORD not in result.output
    assert login(client, email="grace@example.com")["token_type"] == "Bearer"


def test_create_user_refuses_a_short_password(runner):
    result = runner.invoke(args=["create-user", "g@example.com", "--password-stdin"], input="short\n")
    assert result.exit_code != 0 and "8 characters" in result.output


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
        assert tokens.prune(hours=1, batch_size=10, on_batch=batches.append) == 25
        assert db.session.scalar(select(func.count()).select_from(AccessToken)) == 0
    assert batches == [10, 10, 5]
