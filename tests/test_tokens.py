"""Tokens people manage (issue 12): list, personal tokens with abilities, revoke, log out everywhere,
the per-user cap, and refresh families with reuse detection."""
import logging
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import select

from app.auth.abilities import ABILITIES
from app.extensions import db
from app.models import AccessToken, RotatedToken
from tests.support.accounts import bearer, login, register

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ALL_ABILITIES = list(ABILITIES)


def create(client, headers, name="ci", abilities=("subscription:read",), **extra):
    return client.post("/auth/tokens", headers=headers, json={"name": name, "abilities": list(abilities), **extra})


def personal(client, headers, **kwargs):
    response = create(client, headers, **kwargs)
    assert response.status_code == 201, response.json
    return response.json


def stored(app, model=AccessToken):
    with app.app_context():
        return db.session.scalars(select(model).order_by(model.id)).all()


def refresh(client, headers):
    return client.post("/auth/token/refresh", headers=headers)


def test_create_answers_the_secret_once_with_id_name_and_abilities(app, client, auth_headers):
    with time_machine.travel(T0, tick=False):
        body = personal(client, auth_headers, name="  deploy bot ", abilities=["tokens:manage", "profile:read",
                                                                               "profile:read"])
        assert client.get("/auth/me", headers=bearer(body)).status_code == 200
    assert body == {"token_type": "Bearer", "access_token": body["access_token"], "id": body["id"],
                    "name": "deploy bot", "abilities": ["profile:read", "tokens:manage"],
                    "expires_at": "2026-03-09T09:00:00Z"}
    assert body["access_token"].startswith(f"{body['id']}|")
    listed = client.get("/auth/tokens", headers=auth_headers).json["data"]
    assert all("access_token" not in row and "token" not in row for row in listed)


def test_expires_in_days_sets_the_lifetime(client, auth_headers):
    with time_machine.travel(T0, tick=False) as traveller:
        body = personal(client, auth_headers, abilities=["profile:read"], expires_in_days=30)
        assert body["expires_at"] == "2026-04-01T09:00:00Z"
        traveller.shift(timedelta(days=30) - timedelta(seconds=1))
        assert client.get("/auth/me", headers=bearer(body)).status_code == 200
        traveller.shift(timedelta(seconds=1))
        assert client.get("/auth/me", headers=bearer(body)).status_code == 401


@pytest.mark.parametrize("body, field", [
    ({"name": "ci", "abilities": ["profile:read", "admin", "billing:*"]}, "abilities"),
    ({"name": "ci", "abilities": []}, "abilities"),
    ({"name": "ci", "abilities": "profile:read"}, "abilities"),
    ({"name": "ci", "abilities": [7]}, "abilities"),
    ({"name": "ci"}, "abilities"),
    ({"name": "", "abilities": ["profile:read"]}, "name"),
    ({"name": "   ", "abilities": ["profile:read"]}, "name"),
    ({"name": "x" * 101, "abilities": ["profile:read"]}, "name"),
    ({"name": "x" * 250, "abilities": ["profile:read"]}, "name"),
    ({"name": "a\x00b", "abilities": ["profile:read"]}, "name"),
    ({"abilities": ["profile:read"]}, "name"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": 0}, "expires_in_days"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": 367}, "expires_in_days"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": -1}, "expires_in_days"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": 1.5}, "expires_in_days"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": "7"}, "expires_in_days"),
    ({"name": "ci", "abilities": ["profile:read"], "expires_in_days": 10**30}, "expires_in_days"),
])
def test_bad_create_bodies_are_422_naming_the_field(client, auth_headers, body, field):
    response = client.post("/auth/tokens", headers=auth_headers, json=body)
    assert response.status_code == 422, response.json
    assert response.json["error"]["code"] == "validation_error"
    assert list(response.json["error"]["details"]) == [field]


def test_unknown_abilities_are_named(client, auth_headers):
    response = create(client, auth_headers, abilities=["profile:read", "admin", "billing:*"])
    (message,) = response.json["error"]["details"]["abilities"]
    assert "'admin'" in message and "'billing:*'" in message and "profile:read" not in message.split(".")[0]


def test_the_name_may_have_a_hundred_characters(client, auth_headers):
    assert personal(client, auth_headers, name="x" * 100)["name"] == "x" * 100


def test_list_shows_the_callers_live_tokens_newest_first(app, client, user):
    environ = {"REMOTE_ADDR": "203.0.113.7"}
    with time_machine.travel(T0, tick=False) as traveller:
        first = client.post("/auth/login", json={"email": "ada@example.com", "password": "correct horse battery"},
                            headers={"User-Agent": "phone/1.0"}, environ_base=environ).json
        traveller.shift(timedelta(minutes=5))
        current = bearer(login(client))
        made = personal(client, current, name="backup", abilities=["subscription:read"], expires_in_days=2)
        register(client, email="eve@example.com")
        personal(client, bearer(login(client, email="eve@example.com")), name="eve's")
        traveller.shift(timedelta(minutes=5))
        client.get("/subscription", headers=bearer(made))
        listed = client.get("/auth/tokens", headers=current)
    assert listed.status_code == 200
    data = listed.json["data"]
    assert [row["id"] for row in data] == sorted((row["id"] for row in data), reverse=True)
    assert [row["name"] for row in data] == ["backup", "auth", "auth"]
    assert data[0] == {"id": made["id"], "name": "backup", "abilities": ["subscription:read"],
                       "created_at": "2026-03-02T09:05:00Z", "last_used_at": "2026-03-02T09:10:00Z",
                       "expires_at": "2026-03-04T09:05:00Z", "current": False,
                       "user_agent": data[0]["user_agent"], "ip": "127.0.0.1"}
    assert data[0]["user_agent"].startswith("Werkzeug/")  # the test client's own
    assert [row["current"] for row in data] == [False, True, False]
    oldest = data[2]
    assert oldest["id"] == int(first["access_token"].split("|")[0])
    assert (oldest["user_agent"], oldest["ip"], oldest["abilities"]) == ("phone/1.0", "203.0.113.7", [])
    assert oldest["expires_at"] == "2026-03-09T09:00:00Z" and oldest["last_used_at"] is None
    assert listed.json["has_more"] is False


def test_list_pages_with_limit_and_starting_after(client, auth_headers):
    ids = [personal(client, auth_headers, name=f"t{n}")["id"] for n in range(4)]
    page = client.get("/auth/tokens?limit=2", headers=auth_headers).json
    assert [row["id"] for row in page["data"]] == ids[:1:-1] and page["has_more"] is True
    rest = client.get(f"/auth/tokens?limit=2&starting_after={ids[2]}", headers=auth_headers).json
    assert [row["id"] for row in rest["data"]] == [ids[1], ids[0]] and rest["has_more"] is True
    for bad in ("limit=0", "limit=101", "limit=x", "starting_after=abc", f"starting_after={2**63}"):
        response = client.get(f"/auth/tokens?{bad}", headers=auth_headers)
        assert response.status_code == 422 and bad.split("=")[0] in response.json["error"]["details"]


def test_expired_tokens_are_not_listed(client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        personal(client, headers, name="short", expires_in_days=1)
        traveller.shift(timedelta(days=1))
        assert [row["name"] for row in client.get("/auth/tokens", headers=headers).json["data"]] == ["auth"]


def test_login_and_refresh_tokens_keep_spec_2s_name_and_abilities(app, client, auth_headers):
    refreshed = refresh(client, auth_headers).json
    assert set(refreshed) == {"token_type", "access_token", "expires_at"}
    (token,) = stored(app)
    assert (token.name, token.abilities) == ("auth", [])


# Every bearer endpoint and the ability it needs (docs/api.md "Abilities"); None: any valid token.
ENDPOINT_ABILITIES = {
    ("/auth/me", "get"): "profile:read",
    ("/subscription", "get"): "subscription:read",
    ("/subscription/intent", "post"): "subscription:write",
    ("/subscription/portal", "post"): "subscription:write",
    ("/subscription/swap", "post"): "subscription:write",
    ("/subscription/swap/preview", "get"): "subscription:read",
    ("/subscription/cancel", "post"): "subscription:write",
    ("/subscription/resume", "post"): "subscription:write",
    ("/subscription/quantity", "post"): "subscription:write",
    ("/subscription/invoices", "get"): "subscription:read",
    ("/subscription/invoices/upcoming", "get"): "subscription:read",
    ("/subscription/payment-method", "post"): "subscription:write",
    ("/subscription/checkout", "post"): "subscription:write",
    ("/subscription/billing-details", "get"): "subscription:read",
    ("/subscription/billing-details", "put"): "subscription:write",
    ("/subscription/tax-ids", "post"): "subscription:write",
    ("/subscription/tax-ids/{tax_id}", "delete"): "subscription:write",
    ("/subscription/scheduled-change", "delete"): "subscription:write",
    ("/notifications", "get"): "notifications:read",
    ("/auth/tokens", "post"): "tokens:manage",
    ("/auth/tokens/{token_id}", "delete"): "tokens:manage",
    ("/auth/email/verification", "post"): "profile:write",
    ("/auth/password", "post"): "profile:write",
    ("/auth/me", "patch"): "profile:write",
    ("/auth/email/change", "post"): "profile:write",
    ("/auth/me", "delete"): "account:delete",
    ("/auth/tokens", "get"): "tokens:manage",
    ("/auth/logout", "post"): None,
    ("/auth/token/refresh", "post"): None,
    ("/auth/logout-all", "post"): "tokens:manage",
    ("/organizations", "post"): "organizations:write",
    ("/organizations", "get"): "organizations:read",
    ("/organizations/{organization_id}", "get"): "organizations:read",
    ("/organizations/{organization_id}", "patch"): "organizations:write",
    ("/organizations/{organization_id}", "delete"): "organizations:write",
    ("/organizations/{organization_id}/members", "get"): "organizations:read",
    ("/organizations/{organization_id}/members/{user_id}", "patch"): "organizations:write",
    ("/organizations/{organization_id}/members/{user_id}", "delete"): "organizations:write",
    ("/organizations/{organization_id}/transfer", "post"): "organizations:write",
    ("/organizations/{organization_id}/invitations", "post"): "organizations:write",
    ("/organizations/{organization_id}/invitations", "get"): "organizations:read",
    ("/organizations/{organization_id}/invitations/{invitation_id}", "delete"): "organizations:write",
    ("/organizations/invitations/accept", "post"): "organizations:write",
    ("/usage", "get"): "subscription:read",
    ("/organizations/{organization_id}/usage", "get"): "subscription:read",
    ("/entitlements", "get"): "subscription:read",
    ("/organizations/{organization_id}/entitlements", "get"): "subscription:read",
}
# An organisation's billing: the same endpoints and abilities under its prefix (all but quantity).
ORGANIZATION_BILLING = "/organizations/{organization_id}"
ENDPOINT_ABILITIES.update({(ORGANIZATION_BILLING + path, method): ability
                           for (path, method), ability in list(ENDPOINT_ABILITIES.items())
                           if path.startswith("/subscription") and path != "/subscription/quantity"})


def test_every_bearer_endpoint_is_in_the_ability_table_and_documents_its_ability(client):
    document = client.get("/openapi.json").json
    bearer_operations = {(path, method): operation.get("x-abilities")
                         for path, item in document["paths"].items() for method, operation in item.items()
                         if method != "parameters" and operation.get("security") == [{"bearerAuth": []}]}
    assert bearer_operations == {key: [ability] if ability else None for key, ability in ENDPOINT_ABILITIES.items()}
    for (path, method), ability in ENDPOINT_ABILITIES.items():
        responses = document["paths"][path][method]["responses"]
        assert ("403" in responses) == (ability is not None)
        if ability:
            shown = path.replace("{token_id}", "{id}").replace(ORGANIZATION_BILLING + "/subscription", "/subscription")
            assert shown in ABILITIES[ability]


def call(client, path, method, headers):
    path = path.replace("{token_id}", "999999").replace("{user_id}", "1")
    json_body = {"price": "price_unknown"} if path == "/subscription/intent" else {}
    if path == "/auth/tokens" and method == "post":
        json_body = {"name": "x", "abilities": ["tokens:manage"]}
    return client.open(path, method=method.upper(), headers=headers, json=json_body)


@pytest.mark.parametrize("path, method", [key for key, ability in ENDPOINT_ABILITIES.items() if ability])
def test_a_token_without_the_ability_gets_403_insufficient_scope_with_a_challenge(client, auth_headers, path,
                                                                                  method):
    ability = ENDPOINT_ABILITIES[(path, method)]
    others = personal(client, auth_headers, abilities=[a for a in ALL_ABILITIES if a != ability])
    response = call(client, path, method, bearer(others))
    assert response.status_code == 403
    assert response.json["error"]["code"] == "insufficient_scope"
    assert response.json["error"]["details"] == {"ability": ability}
    assert response.headers["WWW-Authenticate"] == f'Bearer error="insufficient_scope", scope="{ability}"'
    only = personal(client, auth_headers, abilities=[ability])
    assert call(client, path, method, bearer(only)).status_code not in (401, 403)
    # A login token (abilities [], SPEC 2) may do everything; a fresh one, as logout-all ended the others.
    assert call(client, path, method, bearer(login(client))).status_code not in (401, 403)


@pytest.mark.parametrize("path, method", [key for key, ability in ENDPOINT_ABILITIES.items() if not ability])
def test_endpoints_without_an_ability_take_any_valid_token(client, auth_headers, path, method):
    narrow = personal(client, auth_headers, abilities=["notifications:read"])
    assert call(client, path, method, bearer(narrow)).status_code < 400


def test_the_token_cap_refuses_one_more_with_409_naming_it(make_app):
    client = make_app(AUTH_MAX_TOKENS_PER_USER=3).test_client()
    register(client)
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        short = personal(client, headers, expires_in_days=1)
        manager = bearer(personal(client, headers, abilities=["tokens:manage", "subscription:read"],
                                  expires_in_days=30))
        response = create(client, headers)
        assert response.status_code == 409
        assert response.json["error"]["code"] == "too_many_tokens"
        assert response.json["error"]["details"] == {"limit": 3} and "3" in response.json["error"]["message"]
        assert client.delete(f"/auth/tokens/{short['id']}", headers=headers).status_code == 204
        personal(client, headers, expires_in_days=30)
        assert create(client, manager).status_code == 409
        traveller.shift(timedelta(days=8))  # the login token expired: it no longer counts
        personal(client, manager, expires_in_days=30)
        assert create(client, manager).status_code == 409
        # Login itself is never refused by the cap (SPEC 3): credentials valid, a token is returned.
        assert client.get("/auth/me", headers=bearer(login(client))).status_code == 200


def test_a_token_mints_only_abilities_it_has(client, auth_headers):
    """Issue 25 item 5: ``tokens:manage`` alone was full access, minting a token with every ability."""
    manager = bearer(personal(client, auth_headers, abilities=["tokens:manage", "subscription:read"]))
    for wanted in (["subscription:write"], ["subscription:read", "profile:read"], list(ABILITIES)):
        refused = create(client, manager, abilities=wanted)
        assert refused.status_code == 403 and refused.json["error"]["code"] == "insufficient_scope", wanted
        assert refused.json["error"]["details"]["ability"] in set(wanted) - {"tokens:manage", "subscription:read"}
    assert personal(client, manager, abilities=["subscription:read"])["abilities"] == ["subscription:read"]
    assert personal(client, manager, abilities=["tokens:manage"])["abilities"] == ["tokens:manage"]
    assert personal(client, auth_headers, abilities=list(ABILITIES))["abilities"] == list(ABILITIES), \
        "a login token has every ability"


def test_listing_sessions_and_logging_out_everywhere_need_tokens_manage(client, auth_headers):
    reader = bearer(personal(client, auth_headers, abilities=["subscription:read"]))
    for method, path in (("GET", "/auth/tokens"), ("POST", "/auth/logout-all")):
        response = client.open(path, method=method, headers=reader, json={})
        assert response.status_code == 403 and response.json["error"]["details"] == {"ability": "tokens:manage"}
    assert client.get("/subscription", headers=reader).status_code == 200, "nothing was logged out"


def test_revoke_deletes_one_of_the_callers_tokens(client, auth_headers):
    made = personal(client, auth_headers)
    assert client.delete(f"/auth/tokens/{made['id']}", headers=auth_headers).status_code == 204
    assert client.get("/subscription", headers=bearer(made)).status_code == 401
    assert client.delete(f"/auth/tokens/{made['id']}", headers=auth_headers).status_code == 404
    assert client.get("/auth/me", headers=auth_headers).status_code == 200


def test_revoking_the_current_token_logs_it_out(client, auth_headers):
    current = client.get("/auth/tokens", headers=auth_headers).json["data"][0]["id"]
    assert client.delete(f"/auth/tokens/{current}", headers=auth_headers).status_code == 204
    assert client.get("/auth/me", headers=auth_headers).status_code == 401


def test_another_users_token_id_is_404_not_403(client, auth_headers):
    register(client, email="eve@example.com")
    eves = bearer(login(client, email="eve@example.com"))
    eve_token = client.get("/auth/tokens", headers=eves).json["data"][0]["id"]
    response = client.delete(f"/auth/tokens/{eve_token}", headers=auth_headers)
    assert response.status_code == 404 and response.json["error"]["code"] == "not_found"
    assert client.delete("/auth/tokens/987654", headers=auth_headers).json == response.json
    assert client.get("/auth/me", headers=eves).status_code == 200


@pytest.mark.parametrize("token_id", ["abc", "1.5", "-3", "0", str(2**63), "%00"])
def test_a_path_id_that_is_no_token_id_is_422_naming_it(client, auth_headers, token_id):
    response = client.delete(f"/auth/tokens/{token_id}", headers=auth_headers)
    assert response.status_code == 422
    assert response.json["error"]["message"] == "The path parameters are not valid: token_id."
    assert list(response.json["error"]["details"]) == ["token_id"]


def test_logout_all_deletes_every_token_of_the_caller_only(client, user):
    first, second = bearer(login(client)), bearer(login(client))
    scoped = bearer(personal(client, first))
    register(client, email="eve@example.com")
    eves = bearer(login(client, email="eve@example.com"))
    response = client.post("/auth/logout-all", headers=second)
    assert response.status_code == 204 and response.data == b""
    for headers in (first, second, scoped):
        assert client.get("/auth/tokens", headers=headers).status_code == 401
    assert client.get("/auth/me", headers=eves).status_code == 200


def test_logout_all_can_keep_the_current_token(app, client, user):
    first, second = bearer(login(client)), bearer(refresh(client, bearer(login(client))).json)
    other = bearer(refresh(client, first).json)
    assert client.post("/auth/logout-all", headers=second, json={"except_current": True}).status_code == 204
    assert client.get("/auth/me", headers=other).status_code == 401
    assert client.get("/auth/me", headers=second).status_code == 200
    # What the other family left rotated out is gone too; the current family's stays for reuse detection.
    assert len(stored(app, RotatedToken)) == 1


def test_logout_all_refuses_a_body_that_is_not_a_boolean(client, auth_headers):
    response = client.post("/auth/logout-all", headers=auth_headers, json={"except_current": "maybe"})
    assert response.status_code == 422 and "except_current" in response.json["error"]["details"]


def test_refresh_keeps_name_abilities_family_and_a_personal_tokens_lifetime(app, client, auth_headers):
    with time_machine.travel(T0, tick=False) as traveller:
        made = personal(client, auth_headers, name="ci", abilities=["subscription:read"], expires_in_days=10)
        traveller.shift(timedelta(days=3))
        successor = refresh(client, bearer(made))
        assert successor.status_code == 200
        assert successor.json["expires_at"] == "2026-03-15T09:00:00Z"
        assert client.get("/auth/me", headers=bearer(successor.json)).status_code == 403
        assert client.get("/subscription", headers=bearer(successor.json)).status_code == 200
    token = next(t for t in stored(app) if t.name == "ci")
    assert (token.abilities, token.family_id) == (["subscription:read"], made["id"])


def test_logout_still_deletes_only_the_current_token(client, user):
    first, second = bearer(login(client)), bearer(login(client))
    assert client.post("/auth/logout", headers=first).status_code == 204
    assert client.get("/auth/me", headers=second).status_code == 200


def test_a_rotated_out_token_within_the_grace_window_is_401_and_revokes_nothing(app, client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        old = bearer(login(client))
        new = bearer(refresh(client, old).json)
        traveller.shift(timedelta(seconds=9))
        for again in (refresh(client, old), client.get("/auth/me", headers=old)):
            assert again.status_code == 401
            assert 'error_description="token rotated out"' in again.headers["WWW-Authenticate"]
        assert client.get("/auth/me", headers=new).status_code == 200


def test_a_rotated_out_token_after_the_grace_window_revokes_its_family(app, client, user, caplog):
    with time_machine.travel(T0, tick=False) as traveller:
        stolen = bearer(login(client))
        other_session = bearer(login(client))
        # The thief refreshes first and keeps going; then the real client presents its token.
        thief = bearer(refresh(client, stolen).json)
        traveller.shift(timedelta(minutes=1))
        thief = bearer(refresh(client, thief).json)
        traveller.shift(timedelta(seconds=10))
        with caplog.at_level(logging.WARNING, logger="app.auth.tokens"):
            replay = client.post("/auth/token/refresh", headers=stolen)
        assert replay.status_code == 401
        assert replay.json["error"]["code"] == "unauthenticated"
        assert 'error_description="token reuse detected"' in replay.headers["WWW-Authenticate"]
        assert client.get("/auth/me", headers=thief).status_code == 401
        assert client.get("/auth/me", headers=other_session).status_code == 200
        assert "reuse detected" in caplog.text and stolen["Authorization"].split("|")[1] not in caplog.text
        assert stored(app, RotatedToken) == []  # the family is gone, tombstones included
        # A second replay finds nothing left to revoke: an unknown token.
        assert "unknown or revoked" in client.get("/auth/me", headers=stolen).headers["WWW-Authenticate"]


def test_the_grace_window_is_a_setting(make_app):
    client = make_app(AUTH_REFRESH_GRACE_SECONDS=0).test_client()
    register(client)
    old = bearer(login(client))
    new = bearer(refresh(client, old).json)
    assert 'token reuse detected' in client.get("/auth/me", headers=old).headers["WWW-Authenticate"]
    assert client.get("/auth/me", headers=new).status_code == 401


def test_a_rotated_out_id_with_a_wrong_secret_revokes_nothing(app, client, auth_headers):
    token_id = auth_headers["Authorization"].split()[1].split("|")[0]
    with time_machine.travel(datetime.now(UTC) + timedelta(minutes=1), tick=False):
        new = bearer(refresh(client, auth_headers).json)
    forged = client.get("/auth/me", headers={"Authorization": f"Bearer {token_id}|{'x' * 43}"})
    assert 'unknown or revoked' in forged.headers["WWW-Authenticate"]
    assert client.get("/auth/me", headers=new).status_code == 200


def test_prune_deletes_expired_rotated_out_tokens(app, client, runner, user):
    with time_machine.travel(T0, tick=False) as traveller:
        refresh(client, bearer(login(client)))
        assert len(stored(app, RotatedToken)) == 1
        traveller.shift(timedelta(minutes=10080, hours=2))
        assert runner.invoke(args=["prune-tokens"]).output.strip() == "pruned 1 expired token(s)"
    assert stored(app, RotatedToken) == [] and stored(app) == []
