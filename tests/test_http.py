"""The HTTP surface every answer shares (``app.http``, ``app.rate_limit``): JSON content type, ``nosniff``,
``no-store`` on answers carrying secrets, bounded URLs, headers and chunked bodies, and a rate-limit store
that is down. tests/reliability/test_http_surface.py repeats the bounds through a real gunicorn."""
import io
import logging
import socket
import threading
import time

import pytest

from app.http import MAX_HEADER_FIELD_SIZE, MAX_HEADER_SIZE, MAX_URL_LENGTH
from app.rate_limit import STORE_TIMEOUT
from tests.redis_server import RedisServer, require_redis_server
from tests.support.accounts import PASSWORD, bearer, login
from tests.support.errors import assert_error


def chunked_post(client, path, data):
    """POST ``data`` as a chunked body, as gunicorn hands it to the app: no Content-Length, input terminated."""
    return client.post(path, input_stream=io.BytesIO(data), content_type="application/json",
                       headers={"Transfer-Encoding": "chunked"}, environ_overrides={"wsgi.input_terminated": True})


def test_a_chunked_body_over_the_limit_is_413(make_app):
    client = make_app(MAX_CONTENT_LENGTH=1000).test_client()
    body = b'{"email": "' + b"a" * 1000 + b'"}'
    assert_error(chunked_post(client, "/auth/login", body), 413, "payload_too_large")


def test_a_chunked_body_within_the_limit_is_read_whole(make_app, user):
    client = make_app(MAX_CONTENT_LENGTH=1000).test_client()
    body = b'{"email": "ada@example.com", "password": "' + PASSWORD.encode() + b'"}'
    body = body.ljust(1000)  # exactly the limit: whitespace after the document is still JSON
    assert chunked_post(client, "/auth/login", body).status_code == 200


@pytest.mark.parametrize("path", ["/auth/login", "/auth/me", "/subscription/portal", "/provider/webhook"])
def test_options_answers_are_empty_json_with_allow(client, path):
    response = client.options(path)
    assert response.status_code == 200 and response.mimetype == "application/json"
    assert response.get_data() == b"" and "OPTIONS" in response.headers["Allow"]


def test_an_empty_204_is_typed_json_too(client, auth_headers):
    response = client.post("/auth/logout", headers=auth_headers)
    assert response.status_code == 204 and response.mimetype == "application/json"


def test_every_answer_carries_nosniff(client, auth_headers):
    for response in (client.get("/health"), client.get("/auth/me", headers=auth_headers), client.get("/nowhere"),
                     client.options("/auth/login"), client.post("/auth/login", json={})):
        assert response.headers["X-Content-Type-Options"] == "nosniff", response.status


def test_answers_carrying_a_secret_are_no_store(client, auth_headers, prices):
    answers = {
        "login": client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD}),
        "refresh": client.post("/auth/token/refresh", headers=auth_headers),
    }
    headers = bearer(answers["refresh"].json)
    answers["intent"] = client.post("/subscription/intent", json={"price": prices["basic"]}, headers=headers)
    answers["portal"] = client.post("/subscription/portal", headers=headers)
    answers["personal token"] = client.post("/auth/tokens", json={"name": "ci", "abilities": ["profile:read"]},
                                            headers=headers)
    for name, response in answers.items():
        assert response.status_code in (200, 201), (name, response.json)
        assert response.headers["Cache-Control"] == "no-store", name
    assert "no-store" not in client.get("/auth/me", headers=headers).headers.get("Cache-Control", "")


def test_a_url_over_the_limit_is_a_json_414(client):
    path = "/auth/me?x=" + "a" * (MAX_URL_LENGTH - len("/auth/me") - 2)
    assert client.get(path).status_code == 401
    response = client.get(path + "a")
    assert_error(response, 414, "uri_too_long")
    assert len(response.headers["X-Request-ID"]) == 32


def test_a_header_field_over_the_limit_is_a_json_431(client):
    value = "a" * (MAX_HEADER_FIELD_SIZE - len("X-Pad: \r\n"))
    assert client.get("/health", headers={"X-Pad": value}).status_code == 200
    assert_error(client.get("/health", headers={"X-Pad": value + "a"}), 431, "request_header_fields_too_large")


def test_headers_over_the_limit_together_are_a_json_431(client):
    headers = {f"X-Pad-{i}": "a" * 2000 for i in range(MAX_HEADER_SIZE // 2000 + 1)}
    assert_error(client.get("/health", headers=headers), 431, "request_header_fields_too_large")


def test_a_rate_limit_answer_carries_the_request_id_and_nosniff(make_app, user):
    client = make_app(AUTH_LOGIN_RATE_LIMIT="1 per minute").test_client()
    login(client)
    response = client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert_error(response, 429, "rate_limited")
    assert len(response.headers["X-Request-ID"]) == 32 and response.headers["X-Content-Type-Options"] == "nosniff"


def test_a_rate_limit_store_that_never_answers_is_a_503_within_its_timeout(make_app, user):
    """A store that accepts connections and then says nothing (a hung Redis) is down after
    ``STORE_TIMEOUT`` seconds, not redis-py's default 5 s that held the worker."""
    with socket.create_server(("127.0.0.1", 0)) as silent:  # the kernel completes the handshakes
        port = silent.getsockname()[1]
        client = make_app(RATELIMIT_STORAGE_URI=f"redis://127.0.0.1:{port}/0").test_client()
        answers = []
        attempt = threading.Thread(target=lambda: answers.append(
            client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})), daemon=True)
        started = time.monotonic()
        attempt.start()
        attempt.join(STORE_TIMEOUT * 10)
        elapsed = time.monotonic() - started
    assert answers, f"the login still waited on the silent store after {elapsed:.1f} s"
    assert_error(answers[0], 503, "service_unavailable")
    assert STORE_TIMEOUT * 0.9 <= elapsed < STORE_TIMEOUT * 5

def test_login_while_the_rate_limit_store_is_down_is_503_and_each_outage_is_logged_once(make_app, user, caplog):
    require_redis_server()
    # Nothing listens on the port at first: the connection is refused, as when Redis is down.
    store = RedisServer()
    client = make_app(RATELIMIT_STORAGE_URI=store.url).test_client()

    def attempts():
        return [client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
                for _ in range(3)]

    def logged():
        messages = [record.getMessage() for record in caplog.records if record.name.startswith("app")]
        caplog.clear()
        return messages

    with caplog.at_level(logging.WARNING, logger="app"):
        for response in attempts():
            assert_error(response, 503, "service_unavailable")
            assert int(response.headers["Retry-After"]) > 0
        (message,) = logged()
        assert "rate-limit store unreachable" in message and "Connection" in message
        assert client.get("/health").status_code == 200  # endpoints without a limit do not need the store
        with store:
            assert [response.status_code for response in attempts()] == [200, 200, 200]
            assert logged() == ["rate-limit store reachable again"]
        assert [response.status_code for response in attempts()] == [503, 503, 503]
        assert len(logged()) == 1
