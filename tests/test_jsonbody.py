"""Request bodies (``app.jsonbody``): what the JSON parser cannot take is ``400 invalid_json`` on every
endpoint, a body of another media type is ``415 unsupported_media_type``, and an empty body is no body."""
import json

import pytest

from tests.signing import sign
from tests.support.accounts import PASSWORD
from tests.support.config import BASE_CONFIG
from tests.support.errors import assert_error

PRICE = next(iter(BASE_CONFIG["PROVIDER_PLANS"]))
# Every endpoint that takes a JSON body, with a body it accepts.
ENDPOINTS = {
    "/auth/register": {"email": "new@example.com", "password": PASSWORD},
    "/auth/login": {"email": "ada@example.com", "password": PASSWORD},
    "/subscription/intent": {"price": PRICE},
    "/subscription/portal": {"return_url": "https://app.example.com/account"},
    "/provider/webhook": {"id": "evt_1", "type": "ping", "created": 1, "data": {"object": {}}},
}
UNREADABLE = {
    "nested 1,000 deep": b'{"email": ' + b"[" * 1000 + b"]" * 1000 + b"}",
    "nested 100,000 deep": b"[" * 100_000 + b"]" * 100_000,
    "an integer of 5,000 digits": b'{"email": ' + b"9" * 5000 + b"}",
    "a number no float holds": b'{"email": "a@example.com", "password": 1e999}',
    "NaN": b'{"email": NaN}',
    "-Infinity": b'{"email": -Infinity}',
    "UTF-16 with a BOM": '{"email": "a@example.com"}'.encode("utf-16"),
    "UTF-16 without a BOM": '{"email": "a@example.com"}'.encode("utf-16-le"),
    "UTF-32": '{"email": "a@example.com"}'.encode("utf-32"),
    "a UTF-8 BOM": '{"email": "a@example.com"}'.encode("utf-8-sig"),
    "Latin-1": '{"email": "zoë@example.com"}'.encode("latin-1"),
    "a lone surrogate encoded": b'{"email": "\xed\xa0\x80@example.com"}',
    "truncated UTF-8": b'{"email": "\xc3"}',
    "two documents": b'{"email": "a@example.com"} {}',
    "not JSON": b"email=a@example.com&password=x",
}


def post(client, path, data, content_type="application/json", headers=None):
    headers = dict(headers or {})
    if path == "/provider/webhook":
        headers["Stripe-Signature"] = sign(data)  # signed: the parse comes after the signature check
    return client.post(path, data=data, content_type=content_type, headers=headers)


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("body", UNREADABLE.values(), ids=UNREADABLE.keys())
def test_a_body_the_parser_cannot_take_is_400_invalid_json(client, auth_headers, path, body):
    assert_error(post(client, path, body, headers=auth_headers), 400, "invalid_json")


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_json_body_sent_as_another_media_type_is_415_naming_json(client, auth_headers, path, content_type):
    response = post(client, path, json.dumps(ENDPOINTS[path]).encode(), content_type, auth_headers)
    error = assert_error(response, 415, "unsupported_media_type")
    assert "application/json" in error["message"]
    assert error["details"] == {"expected": "application/json", "received": content_type}


@pytest.mark.parametrize("content_type", ["application/json; charset=utf-8", "application/merge-patch+json"])
def test_json_media_types_with_parameters_or_a_suffix_are_json(client, content_type):
    response = post(client, "/auth/register", json.dumps(ENDPOINTS["/auth/register"]).encode(), content_type)
    assert response.status_code == 201, response.json


@pytest.mark.parametrize("content_type", [None, "application/json", "text/plain"])
def test_an_empty_body_is_no_body(client, auth_headers, content_type):
    # The portal's body is optional: curl -X POST sends none, and some clients send the header anyway.
    response = client.post("/subscription/portal", content_type=content_type, headers=auth_headers)
    assert response.status_code == 200 and response.json["url"], response.json
    error = assert_error(client.post("/auth/login", content_type=content_type), 422, "validation_error")
    assert set(error["details"]) == {"email", "password"}


def test_a_deeply_nested_login_still_counts_against_the_rate_limit(make_app):
    client = make_app(AUTH_LOGIN_RATE_LIMIT="2 per minute").test_client()
    statuses = [post(client, "/auth/login", UNREADABLE["nested 1,000 deep"]).status_code for _ in range(3)]
    assert statuses == [400, 400, 429]
