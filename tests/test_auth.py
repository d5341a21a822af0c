"""Auth endpoints through the HTTP client: SPEC 3 token lifecycle, SPEC 4 rules 1-3, SPEC 5."""
import hashlib
import logging
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import event, select

from app.db_session import autocommit_engine
from app.extensions import db
from app.models import AccessToken, Subscription, User
from tests.support.accounts import PASSWORD, bearer, login, register, verify

T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


def parse_ts(value):
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def stored_tokens(app):
    with app.app_context():
        return db.session.scalars(select(AccessToken)).all()


def test_register_returns_the_user_without_a_token_or_password(client):
    body = register(client, email=" Ada@Example.COM\t")
    assert body == {"id": body["id"], "email": "ada@example.com", "email_verified_at": None, "name": "Ada",
                    "plan": "free", "card": None, "subscription": None, "organizations": []}


def test_register_refuses_an_email_taken_in_another_case(client, user):
    response = client.post("/auth/register", json={"email": "ADA@example.com", "password": PASSWORD})
    assert response.status_code == 409
    assert response.json["error"]["code"] == "email_taken"


@pytest.mark.parametrize("body, field", [
    ({"email": "not-an-email", "password": PASSWORD}, "email"),
    ({"email": "a@example.com", "password": "short"}, "password"),
    ({"email": "a@example.com"}, "password"),
    ({"email": "a@example.com", "password": PASSWORD, "admin": True}, "admin"),
])
def test_register_validates_the_body(client, body, field):
    response = client.post("/auth/register", json=body)
    assert response.status_code == 422
    assert response.json["error"]["code"] == "validation_error"
    assert field in response.json["error"]["details"]


def test_password_is_stored_as_an_argon2id_hash(app, client, user):
    with app.app_context():
        stored = db.session.get(User, user["id"]).password_hash
    assert stored.startswith("$argon2id$") and PASSWORD not in stored


def test_login_returns_a_bearer_token_per_contract(app, client, user):
    with time_machine.travel(T0, tick=False):
        body = login(client)
    assert body["token_type"] == "Bearer"
    token_id, secret = body["access_token"].split("|")
    assert token_id.isdigit() and len(secret) >= 40
    # No remember-me extension: the global expiration (10080 minutes) applies.
    assert parse_ts(body["expires_at"]) == T0 + timedelta(minutes=10080)
    (token,) = stored_tokens(app)
    assert token.name == "auth" and token.abilities == [] and token.expires_at is None
    assert token.token == hashlib.sha256(secret.encode()).hexdigest()


def test_unknown_email_and_wrong_password_answer_alike(client, user):
    unknown = client.post("/auth/login", json={"email": "nobody@example.com", "password": PASSWORD})
    wrong = client.post("/auth/login", json={"email": "ada@example.com", "password": "wrong password"})
    assert unknown.status_code == wrong.status_code == 401
    assert unknown.json == wrong.json == {
        "error": {"code": "invalid_credentials", "message": "The email or password is incorrect."}}


def test_login_email_is_case_insensitive_and_stripped(client, user):
    assert login(client, email=" ADA@example.com ")["token_type"] == "Bearer"


def test_me_requires_a_bearer_token(client):
    response = client.get("/auth/me")
    assert response.status_code == 401
    assert response.json["error"]["code"] == "unauthenticated"
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="api"'


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer nopipe", "Bearer x|y", "Bearer 999|secret"])
def test_malformed_or_unknown_tokens_are_rejected_with_a_challenge(client, user, header):
    response = client.get("/auth/me", headers={"Authorization": header})
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]


def test_a_valid_id_with_a_wrong_secret_is_rejected(client, auth_headers):
    token_id = auth_headers["Authorization"].split()[1].split("|")[0]
    response = client.get("/auth/me", headers={"Authorization": f"Bearer {token_id}|{'x' * 43}"})
    assert response.status_code == 401


def test_me_returns_the_current_user(client, user, auth_headers):
    assert client.get("/auth/me", headers=auth_headers).json == user


def add_subscription(app, user_id, provider_id, status, created, price="price_000000000000000000000000"):
    with app.app_context():
        db.session.add(Subscription(
            user_id=user_id, provider_id=provider_id, provider_status=status,
            provider_price=price, quantity=1, provider_created_at=created,
            provider_updated_at=created))
        db.session.commit()


def test_a_price_missing_from_provider_plans_is_warned_about_once_per_request(app, client, user, auth_headers,
                                                                                caplog):
    add_subscription(app, user["id"], "sub_dashboard", "active", datetime(2026, 1, 1, tzinfo=UTC),
                     price="price_from_the_dashboard")
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="app.billing.plans"):
            me = client.get("/auth/me", headers=auth_headers).json
        assert me["plan"] == me["subscription"]["plan"] == "price_from_the_dashboard"
        assert [r.getMessage() for r in caplog.records if r.name == "app.billing.plans"] == [
            "price price_from_the_dashboard is not in PROVIDER_PLANS; using the price id as the plan name"]


def test_an_authenticated_read_is_one_statement_with_the_plan_from_every_subscription(app, client, user, auth_headers):
    """The bearer path reads token, user and subscriptions in one statement (issue 13), on any number of them,
    with whether the user is in an organisation; ``/auth/me`` reads the organisations in one more only then."""
    add_subscription(app, user["id"], "sub_old", "canceled", datetime(2025, 1, 1, tzinfo=UTC))
    add_subscription(app, user["id"], "sub_new", "active", datetime(2026, 1, 1, tzinfo=UTC))
    assert client.get("/auth/me", headers=auth_headers).status_code == 200  # writes last_used_at once
    with app.app_context():
        engines = list(db.engines.values())  # on PostgreSQL, reads have an autocommit engine of their own

    def statements_of_me():
        statements = []
        record = lambda conn, cursor, statement, *args: statements.append(statement)  # noqa: E731
        for engine in engines:
            event.listen(engine, "before_cursor_execute", record)
        try:
            me = client.get("/auth/me", headers=auth_headers).json
        finally:
            for engine in engines:
                event.remove(engine, "before_cursor_execute", record)
        return statements, me

    statements, me = statements_of_me()
    assert len(statements) == 1 and "personal_access_tokens" in statements[0]
    assert me["plan"] == "pro" and me["subscription"]["id"] == "sub_new" and me["organizations"] == []
    verify(app, user["email"])
    assert client.post("/organizations", json={"name": "Acme"}, headers=auth_headers).status_code == 201
    statements, me = statements_of_me()
    assert len(statements) == 2 and "organization_members" in statements[1]
    assert [organization["name"] for organization in me["organizations"]] == ["Acme"]


def test_reads_run_in_autocommit_on_their_own_engine_and_writes_in_a_transaction(app, client, auth_headers):
    """On PostgreSQL a GET's statements run on the ``autocommit`` bind (no BEGIN, no level switch at
    checkout); a POST's in a transaction on the default engine. SQLite has the one engine for both."""
    with app.app_context():
        default, reads = db.engine, autocommit_engine()
    server = default.dialect.name != "sqlite"
    assert (reads is not default) == server
    assert client.get("/auth/me", headers=auth_headers).status_code == 200  # writes last_used_at once
    seen = []

    def record(conn, cursor, statement, *args):
        autocommit = getattr(conn.connection.dbapi_connection, "autocommit", None)
        seen.append((conn.engine is reads, statement.split()[0], autocommit))

    for engine in {default, reads}:
        event.listen(engine, "before_cursor_execute", record)
    try:
        assert client.get("/auth/me", headers=auth_headers).status_code == 200
        reading, seen[:] = list(seen), []
        assert client.post("/auth/tokens", json={"name": "ci", "abilities": ["profile:read"]},
                           headers=auth_headers).status_code == 201
        writing = list(seen)
    finally:
        for engine in {default, reads}:
            event.remove(engine, "before_cursor_execute", record)
    # The bearer lookup of either request reads on the reads engine (a user in no organisation: /auth/me's
    # one statement); the POST's view then writes.
    assert [(on_reads, verb) for on_reads, verb, _ in reading] == [(True, "SELECT")]
    assert writing[0][:2] == (True, "SELECT") and len(writing) > 1
    if server:
        assert reading[0][2] is True and writing[0][2] is True
        assert all(not on_reads and autocommit is False for on_reads, _, autocommit in writing[1:])

def test_logout_deletes_only_the_current_token(app, client, user):
    first, second = bearer(login(client)), bearer(login(client))
    assert client.post("/auth/logout", headers=first).status_code == 204
    assert client.get("/auth/me", headers=first).status_code == 401
    assert client.get("/auth/me", headers=second).status_code == 200
    assert len(stored_tokens(app)) == 1


def test_refresh_rotates_the_token(app, client, auth_headers):
    response = client.post("/auth/token/refresh", headers=auth_headers)
    assert response.status_code == 200
    assert client.get("/auth/me", headers=auth_headers).status_code == 401
    assert client.get("/auth/me", headers=bearer(response.json)).status_code == 200
    assert len(stored_tokens(app)) == 1


def test_token_ids_are_never_reused(client, auth_headers):
    old_id = auth_headers["Authorization"].split()[1].split("|")[0]
    new_id = client.post("/auth/token/refresh", headers=auth_headers).json["access_token"].split("|")[0]
    assert int(new_id) > int(old_id)


def test_expired_token_is_rejected_and_cannot_be_refreshed(app, client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        traveller.shift(timedelta(minutes=10080) - timedelta(seconds=1))
        assert client.get("/auth/me", headers=headers).status_code == 200
        traveller.shift(timedelta(seconds=1))
        response = client.get("/auth/me", headers=headers)
        assert response.status_code == 401
        assert 'error_description="token expired"' in response.headers["WWW-Authenticate"]
        assert client.post("/auth/token/refresh", headers=headers).status_code == 401
    # SPEC 3: expired tokens stay stored until pruned.
    assert len(stored_tokens(app)) == 1


def test_refresh_before_expiry_keeps_the_session_alive(client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        for _ in range(3):
            traveller.shift(timedelta(days=6))
            refreshed = client.post("/auth/token/refresh", headers=headers)
            assert refreshed.status_code == 200
            headers = bearer(refreshed.json)
        assert client.get("/auth/me", headers=headers).status_code == 200


def test_global_expiration_is_read_at_check_time(make_app):
    short = make_app(AUTH_TOKEN_EXPIRATION=5)
    client = short.test_client()
    register(client)
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        traveller.shift(timedelta(minutes=5))
        assert client.get("/auth/me", headers=headers).status_code == 401


def test_empty_global_expiration_means_tokens_do_not_expire(make_app):
    client = make_app(AUTH_TOKEN_EXPIRATION="").test_client()
    register(client)
    with time_machine.travel(T0, tick=False) as traveller:
        body = login(client)
        assert body["expires_at"] is None
        traveller.shift(timedelta(days=3650))
        assert client.get("/auth/me", headers=bearer(body)).status_code == 200


def test_remember_me_is_ignored_without_the_extension(client, user):
    with time_machine.travel(T0, tick=False):
        body = login(client, remember_me=True)
    assert parse_ts(body["expires_at"]) == T0 + timedelta(minutes=10080)


@pytest.mark.parametrize("remember_me, lifetime", [(True, timedelta(days=30)), (False, timedelta(hours=2)),
                                                   (None, timedelta(hours=2))])
def test_remember_me_extension_sets_an_explicit_expiry(make_app, remember_me, lifetime):
    client = make_app(AUTH_REMEMBER_ME="true").test_client()
    register(client)
    extra = {} if remember_me is None else {"remember_me": remember_me}
    with time_machine.travel(T0, tick=False) as traveller:
        body = login(client, **extra)
        assert parse_ts(body["expires_at"]) == T0 + lifetime
        traveller.shift(lifetime - timedelta(seconds=1))
        assert client.get("/auth/me", headers=bearer(body)).status_code == 200
        traveller.shift(timedelta(seconds=1))
        assert client.get("/auth/me", headers=bearer(body)).status_code == 401


def test_explicit_expiry_wins_over_the_global_expiration(make_app):
    # 30 remembered days outlive a 7-day global lifetime (SPEC 5 rule 5).
    client = make_app(AUTH_REMEMBER_ME="1").test_client()
    register(client)
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client, remember_me=True))
        traveller.shift(timedelta(days=20))
        assert client.get("/auth/me", headers=headers).status_code == 200


@pytest.mark.parametrize("remember_me, lifetime", [(True, timedelta(days=30)), (False, timedelta(hours=2))])
def test_refresh_carries_the_remember_me_lifetime_forward(make_app, remember_me, lifetime):
    client = make_app(AUTH_REMEMBER_ME="on").test_client()
    register(client)
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client, remember_me=remember_me))
        traveller.shift(timedelta(minutes=30))
        refreshed = client.post("/auth/token/refresh", headers=headers).json
        assert parse_ts(refreshed["expires_at"]) == T0 + timedelta(minutes=30) + lifetime


def test_token_prefix_is_part_of_the_secret(make_app):
    app = make_app(AUTH_TOKEN_PREFIX="subs_")
    client = app.test_client()
    register(client)
    body = login(client)
    secret = body["access_token"].split("|", 1)[1]
    assert secret.startswith("subs_") and len(secret) >= 45
    assert client.get("/auth/me", headers=bearer(body)).status_code == 200
    assert stored_tokens(app)[0].token == hashlib.sha256(secret.encode()).hexdigest()


def test_last_used_at_is_written_at_most_once_a_minute(app, client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        headers = bearer(login(client))
        assert stored_tokens(app)[0].last_used_at is None
        client.get("/auth/me", headers=headers)
        assert stored_tokens(app)[0].last_used_at == T0
        traveller.shift(timedelta(seconds=59))
        client.get("/auth/me", headers=headers)
        assert stored_tokens(app)[0].last_used_at == T0
        traveller.shift(timedelta(seconds=1))
        client.get("/auth/me", headers=headers)
        assert stored_tokens(app)[0].last_used_at == T0 + timedelta(minutes=1)


def test_login_is_rate_limited_per_email_and_address(client, user):
    statuses = [client.post("/auth/login", json={"email": "ada@example.com", "password": "wrong one"}).status_code
                for _ in range(11)]
    assert statuses == [401] * 10 + [429]
    limited = client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert limited.status_code == 429
    assert limited.json["error"]["code"] == "rate_limited"
    assert int(limited.headers["Retry-After"]) > 0
    # Another email from the same address is not locked out by the first one's failures.
    assert client.post("/auth/login", json={"email": "bob@example.com", "password": PASSWORD}).status_code == 401


def test_rate_limit_window_passes(client, user):
    with time_machine.travel(T0, tick=False) as traveller:
        for _ in range(11):
            client.post("/auth/login", json={"email": "ada@example.com", "password": "wrong one"})
        traveller.shift(timedelta(minutes=1, seconds=1))
        assert login(client)["token_type"] == "Bearer"


def test_deleting_a_user_deletes_their_tokens(app, client, user, auth_headers):
    with app.app_context():
        db.session.delete(db.session.get(User, user["id"]))
        db.session.commit()
    assert stored_tokens(app) == []
    assert client.get("/auth/me", headers=auth_headers).status_code == 401


# Raw bodies: json.loads turns the escape into an unpaired surrogate, which no UTF-8 encoder accepts.
@pytest.mark.parametrize("path, body, field", [
    ("/auth/register", r'{"email": "b@example.com", "password": "lone \ud800 surrogate"}', "password"),
    ("/auth/register", r'{"email": "b@example.com", "password": "correct horse", "name": "A\ud800"}', "name"),
    ("/auth/register", r'{"email": "b\udfff@example.com", "password": "correct horse"}', "email"),
    ("/auth/login", r'{"email": "ada@example.com", "password": "lone \ud800 surrogate"}', "password"),
    ("/auth/login", r'{"email": "ada\ud800@example.com", "password": "correct horse"}', "email"),
])
def test_lone_surrogates_are_a_422_naming_the_field(client, user, path, body, field):
    response = client.post(path, data=body, content_type="application/json")
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.json["error"]["code"] == "validation_error"
    assert list(response.json["error"]["details"]) == [field]


def test_a_valid_surrogate_pair_is_an_ordinary_character(client):
    response = client.post("/auth/register", data=r'{"email": "c@example.com", "password": "correct horse", '
                                                   r'"name": "Ada \ud83d\ude00"}', content_type="application/json")
    assert response.status_code == 201 and response.json["name"] == "Ada \U0001F600"


@pytest.mark.parametrize("path, field, value", [
    ("/auth/login", "remember_me", 1), ("/auth/login", "remember_me", "yes"), ("/auth/login", "remember_me", 0),
    ("/auth/logout-all", "except_current", 0), ("/auth/logout-all", "except_current", "true"),
])
def test_booleans_are_json_booleans_only(client, user, auth_headers, path, field, value):
    """The document says boolean; marshmallow alone also took 0, 1, "yes" and "true" (a schemathesis find)."""
    body = {"email": "ada@example.com", "password": "correct horse"} if path == "/auth/login" else {}
    response = client.post(path, json={**body, field: value}, headers=auth_headers)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert list(response.json["error"]["details"]) == [field]
    assert client.get("/auth/me", headers=auth_headers).status_code == 200  # logout-all deleted nothing
