"""``GET /health`` reports whether the database answers."""
from app import create_app
from tests.conftest import BASE_CONFIG


def test_health_is_ok_when_the_database_answers(client):
    response = client.get("/health")
    assert response.status_code == 200 and response.json == {"status": "ok"}


def test_health_is_503_when_the_database_is_gone(tmp_path):
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp_path}/missing-dir/x.db"})
    response = app.test_client().get("/health")
    assert response.status_code == 503
    assert response.json["error"]["code"] == "service_unavailable"
