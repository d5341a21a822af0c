"""Every failure answers the one JSON error shape (CONTRACT "Error"), never an HTML page."""
import logging

import pytest
from sqlalchemy.exc import OperationalError

from tests.support.accounts import PASSWORD, bearer, login, register
from tests.support.config import BASE_CONFIG
from tests.support.databases import holding_lock, one_second_lock_wait
from tests.support.errors import assert_error


def test_unknown_path_is_a_json_404(client):
    assert_error(client.get("/no/such/path"), 404, "not_found")


def test_wrong_method_is_a_json_405_with_allow(client):
    response = client.delete("/auth/login")
    assert_error(response, 405, "method_not_allowed")
    assert "POST" in response.headers["Allow"]


def test_oversized_body_is_a_json_413(client):
    response = client.post("/auth/login", data=b"{" + b" " * (1024 * 1024 + 1) + b"}",
                           content_type="application/json")
    assert_error(response, 413, "payload_too_large")


def test_malformed_json_is_a_json_400(client):
    assert_error(client.post("/auth/register", data="{not json", content_type="application/json"),
                 400, "invalid_json")


@pytest.mark.parametrize("body", [[], "a string", 42, {"email": ["x"], "password": {"a": 1}}])
def test_wrong_types_are_a_422_with_field_details(client, body):
    error = assert_error(client.post("/auth/login", json=body), 422, "validation_error")
    assert error["details"]


@pytest.mark.parametrize("email", ["a\x00b@example.com", "ü" * 400 + "@example.com", "\ud83d\ude00@@"])
def test_odd_input_is_refused_cleanly(client, email):
    assert_error(client.post("/auth/register", json={"email": email, "password": PASSWORD}), 422,
                 "validation_error")


def test_unexpected_exception_is_a_json_500_logged_with_the_request_id(make_app, caplog):
    app = make_app(new=True, PROPAGATE_EXCEPTIONS=False)

    @app.get("/boom")
    def boom():
        raise RuntimeError("secret internals")

    with caplog.at_level(logging.ERROR, logger="app"):
        response = app.test_client().get("/boom", headers={"X-Request-ID": "req-123"})
    error = assert_error(response, 500, "internal_error")
    assert "secret internals" not in response.get_data(as_text=True)
    assert error["details"] == {"request_id": "req-123"}
    assert response.headers["X-Request-ID"] == "req-123"
    assert any("req-123" in r.getMessage() and r.exc_info for r in caplog.records)


def test_every_response_carries_a_request_id(client):
    assert len(client.get("/health").headers["X-Request-ID"]) == 32


@pytest.mark.parametrize("credential", ["99999999999999999999999|secret", "١|secret", "-1|secret"])
def test_token_ids_that_cannot_exist_are_a_401_not_a_500(client, credential):
    assert_error(client.get("/auth/me", headers={"Authorization": f"Bearer {credential}"}), 401, "unauthenticated")


def test_nul_in_a_stored_string_is_a_422(client):
    response = client.post("/auth/register", json={"email": "nul@example.com", "password": PASSWORD, "name": "a\x00b"})
    assert_error(response, 422, "validation_error")


def test_an_out_of_range_page_cursor_is_a_422(client, auth_headers):
    assert_error(client.get("/notifications?starting_after=99999999999999999999999", headers=auth_headers), 422,
                 "validation_error")


def test_a_write_that_waits_out_the_database_lock_is_a_503(make_app, database_url):
    """Another transaction holds the lock a write needs, as a concurrent intent does while it talks
    to the provider: SQLite's database-wide write lock past a 1 s ``busy_timeout``, or the user's row on
    PostgreSQL past a 1 s ``lock_timeout`` (an operator's setting; the default waits for the lock)."""
    app = make_app(SQLALCHEMY_ENGINE_OPTIONS=one_second_lock_wait(database_url))
    client = app.test_client()
    headers = bearer(login(client, register(client)["email"]))
    with holding_lock(database_url, "SELECT id FROM users FOR UPDATE"):
        response = client.post("/subscription/intent", json={"price": next(iter(BASE_CONFIG["PROVIDER_PLANS"]))},
                               headers=headers)
    assert_error(response, 503, "service_unavailable")
    assert response.headers["Retry-After"] == "1"


class _PostgresError(Exception):
    def __init__(self, sqlstate):
        super().__init__(f"SQLSTATE {sqlstate}")
        self.sqlstate = sqlstate


@pytest.mark.parametrize("sqlstate, status", [("55P03", 503), ("40P01", 503), ("08006", 500)])
def test_a_postgresql_lock_timeout_is_a_503_and_other_database_errors_a_500(make_app, sqlstate, status):
    app = make_app(new=True, PROPAGATE_EXCEPTIONS=False)

    @app.post("/locked")
    def locked():
        raise OperationalError("UPDATE users SET updated_at=%(updated_at)s", {}, _PostgresError(sqlstate))

    response = app.test_client().post("/locked")
    assert_error(response, status, "service_unavailable" if status == 503 else "internal_error")
    assert "UPDATE users" not in response.get_data(as_text=True)


def test_invalid_query_parameters_are_named_as_such(client, auth_headers):
    error = assert_error(client.get("/notifications?limit=0", headers=auth_headers), 422, "validation_error")
    assert error["message"] == "The query parameters are not valid." and "limit" in error["details"]
    error = assert_error(client.post("/auth/login", json={}), 422, "validation_error")
    assert error["message"] == "The request body is not valid."
