"""``GET /health`` reports whether the database answers; ``GET /health/ready`` every configured part."""
import logging

import pytest

from app import create_app, health
from tests.ports import free_port
from tests.support.config import BASE_CONFIG


def test_health_is_ok_when_the_database_answers(client):
    response = client.get("/health")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_health_is_503_when_the_database_is_gone(tmp_path):
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/missing-dir/x.db"})
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.json["error"]["code"] == "service_unavailable"


def test_ready_checks_only_the_database_by_default(client):
    response = client.get("/health/ready")
    assert response.status_code == 200
    assert response.json == {"status": "ok", "checks": {"database": "ok"}}


def test_ready_checks_the_rate_limit_store_and_the_smtp_server_when_configured(make_app, smtp_server, redis_url):
    app = make_app(RATELIMIT_STORAGE_URI=redis_url, MAIL_SERVER="127.0.0.1",
                   MAIL_PORT=smtp_server.port)
    response = app.test_client().get("/health/ready")
    assert response.status_code == 200
    assert response.json["checks"] == {"database": "ok", "rate_limit_store": "ok", "smtp": "ok"}


@pytest.mark.parametrize("down", ["rate_limit_store", "smtp"])
def test_ready_is_503_naming_the_part_that_is_down(make_app, smtp_server, request, down):
    closed_port = free_port()  # nothing listens there
    # Redis is asked for only when it is to be up, so the SMTP case alone needs a redis-server.
    store = f"redis://127.0.0.1:{closed_port}/0" if down == "rate_limit_store" else request.getfixturevalue("redis_url")
    app = make_app(RATELIMIT_STORAGE_URI=store, MAIL_SERVER="127.0.0.1",
                   MAIL_PORT=closed_port if down == "smtp" else smtp_server.port)
    client = app.test_client()
    response = client.get("/health/ready")
    assert response.status_code == 503
    error = response.json["error"]
    assert error["code"] == "service_unavailable" and down in error["message"]
    checks = error["details"]["checks"]
    assert checks[down].startswith("unavailable") and checks["database"] == "ok"
    assert [name for name, result in checks.items() if result != "ok"] == [down]
    assert client.get("/health").status_code == 200  # liveness asks the database only


def test_ready_is_503_when_the_database_is_gone(tmp_path):
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/missing-dir/x.db"})
    response = app.test_client().get("/health/ready")
    assert response.status_code == 503
    assert response.json["error"]["details"]["checks"]["database"].startswith("unavailable")


def health_lines(caplog):
    return [(record.getMessage(), record.exc_info) for record in caplog.records if record.name == "app.health"]


@pytest.mark.parametrize("part", ["rate_limit_store", "smtp"])
def test_a_failing_part_is_logged_in_one_line_with_its_address_and_errno_once_a_minute(make_app, caplog,
                                                                                        monkeypatch, part):
    closed_port = free_port()  # nothing listens there
    settings = ({"RATELIMIT_STORAGE_URI": f"redis://127.0.0.1:{closed_port}/0"} if part == "rate_limit_store"
                else {"MAIL_SERVER": "127.0.0.1", "MAIL_PORT": closed_port})
    client = make_app(**settings).test_client()
    line = f"health check: {part} at 127.0.0.1:{closed_port} unavailable: ECONNREFUSED (Connection refused)"
    with caplog.at_level(logging.WARNING, logger="app.health"):
        for _ in range(3):  # probes seconds apart: the same cause is logged once
            assert client.get("/health/ready").status_code == 503
        assert health_lines(caplog) == [(line, None)]
        monkeypatch.setattr(health, "LOG_EVERY_SECONDS", 0)  # as if the minute had passed
        client.get("/health/ready")
    assert health_lines(caplog) == [(line, None), (line, None)]


def test_a_database_that_is_gone_is_logged_in_one_line_naming_the_file(tmp_path, caplog):
    path = tmp_path / "missing-dir" / "x.db"
    client = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{path}"}).test_client()
    with caplog.at_level(logging.WARNING, logger="app.health"):
        assert client.get("/health").status_code == 503
        assert client.get("/health/ready").status_code == 503
    assert health_lines(caplog) == [
        (f"health check: database at {path} unavailable: OperationalError: unable to open database file", None)]
