"""The HTTP surface through a real gunicorn: what the app bounds answers as JSON with a request id, and
what only gunicorn refuses (docs/api.md "HTTP surface") stays as documented."""
import json

import requests

from app.http import MAX_HEADER_FIELD_SIZE, MAX_URL_LENGTH
from tests.support.reliability import TALLY


def assert_json_error(response, status, code):
    assert response.status_code == status, response.text[:200]
    assert response.headers["Content-Type"] == "application/json"
    assert response.json()["error"]["code"] == code
    assert len(response.headers["X-Request-ID"]) == 32
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def chunks(data, size=8192):
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_oversized_urls_headers_and_chunked_bodies_are_json_answers_under_gunicorn(gunicorn):
    url = f"{gunicorn.url}/auth/me?x=" + "a" * MAX_URL_LENGTH
    assert_json_error(requests.get(url, timeout=30), 414, "uri_too_long")
    assert_json_error(gunicorn.get("/health", headers={"X-Pad": "a" * (MAX_HEADER_FIELD_SIZE + 1)}), 431,
                      "request_header_fields_too_large")
    assert_json_error(gunicorn.get("/health", headers={f"X-Pad-{i}": "a" * 2000 for i in range(10)}), 431,
                      "request_header_fields_too_large")
    body = json.dumps({"email": "a" * (1024 * 1024), "password": "x"}).encode()
    assert_json_error(gunicorn.post("/auth/login", data=chunks(body), headers={"Content-Type": "application/json"}),
                      413, "payload_too_large")
    small = json.dumps({"email": "nobody@example.com", "password": "not the password"}).encode()
    assert_json_error(gunicorn.post("/auth/login", data=chunks(small, 7), headers={"Content-Type": "application/json"}),
                      401, "invalid_credentials")
    options = requests.options(f"{gunicorn.url}/auth/login", timeout=30)
    assert options.status_code == 200 and options.headers["Content-Type"] == "application/json"
    assert options.content == b""
    TALLY["inputs_tried"] += 6


def test_what_only_gunicorn_refuses_is_past_its_own_limits(gunicorn):
    """gunicorn's defaults: a request line of 4,094 bytes, a header field of 8,190. Past them the app never
    runs, so the answer is gunicorn's own plain page without a request id."""
    line = requests.get(f"{gunicorn.url}/auth/me?x=" + "a" * 4100, timeout=30)
    field = gunicorn.get("/health", headers={"X-Pad": "a" * 8200})
    for response, status in ((line, 400), (field, 431)):
        assert response.status_code == status
        assert "X-Request-ID" not in response.headers
    TALLY["inputs_tried"] += 2
