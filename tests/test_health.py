"""``GET /health`` reports whether the database answers; ``GET /health/ready`` every configured part."""
import pytest

from app import create_app
from tests.conftest import BASE_CONFIG
from tests.ports import free_port


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
