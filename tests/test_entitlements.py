"""Entitlements (issue 44, CONTRACT "Additions (sixth round)", "Entitlements"): features that follow the entitled
plan, the quota ledger and its periods, check and consume exactly once, reservations, overrides, fail closed.

Through HTTP and the CLI runner; plans follow Stripe through the real stripe SDK, the emulator and its webhooks.
"""
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import func, select

from app import create_app
from app.config import ConfigError
from app.extensions import db
from app.models import EntitlementBalance, EntitlementConsume, Subscription
from tests.support.accounts import bearer, login, register
from tests.support.billing import DAY
from tests.support.config import BASE_CONFIG
from tests.support.databases import holding_lock
from tests.support.entitlements import FEATURES, check, consume, service_key, statements_of
from tests.support.organizations import make_team


@pytest.fixture
def app(make_app, prices):
    return make_app(PLAN_FEATURES=FEATURES)


@pytest.fixture
def live_config():
    return {"PLAN_FEATURES": FEATURES}


@pytest.fixture
def key(runner):
    return service_key(runner, "entitlements:check")


@pytest.fixture
def ada(client):
    """A user on the free plan: ``(id, bearer headers)``."""
    user_id = register(client)["id"]
    return user_id, bearer(login(client))


def next_month(now):
    start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return (start + timedelta(days=32)).replace(day=1)


# PLAN_FEATURES and ENTITLEMENT_ALERT_THRESHOLDS at start

@pytest.mark.parametrize("features, words", [
    ("{not json", "PLAN_FEATURES must be JSON"),
    ({"platinum": {"sso": True}}, "plan 'platinum' is neither in PROVIDER_PLANS nor FREE_PLAN"),
    ({"free": {"SSO": True}}, "feature 'SSO', not a feature name"),
    ({"free": {"ai": {"limit": -1}}}, "plan 'free' feature 'ai' limit must be a whole number >= 0 or null"),
    ({"free": {"ai": {"limit": 5, "reset": "daily"}}}, "reset must be period or never"),
    ({"free": {"ai": {"reset": "never"}}}, "needs a limit"),
    ({"free": {"ai": {"limit": 5, "overage": True}}}, "overage without a meter"),
    ({"free": {"ai": {"limit": 5, "burst": 1}}}, "unknown key 'burst'"),
    ({"free": {"ai": True}, "pro": {"ai": {"limit": 5}}}, "feature 'ai' is a boolean in plan 'free' but a quota"),
    ({"free": {"ai": "yes"}}, "must be true, false or a quota object"),
    ("@/nonexistent/features.json", "PLAN_FEATURES: cannot read '/nonexistent/features.json'"),
])
def test_plan_features_are_checked_at_start_in_one_line(features, words):
    with pytest.raises(ConfigError) as raised:
        create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": "sqlite://", "PLAN_FEATURES": features})
    assert words in str(raised.value) and "\n" not in str(raised.value)


def test_plan_features_read_from_a_file_and_thresholds_checked(tmp_path):
    path = tmp_path / "features.json"
    path.write_text('{"pro": {"sso": true, "ai.tokens": {"limit": null, "reset": "never"}}}')
    app = create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": "sqlite://", "PLAN_FEATURES": f"@{path}",
                      "ENTITLEMENT_ALERT_THRESHOLDS": "100, 50"})
    assert app.config["PLAN_FEATURES"]["pro"]["ai.tokens"] == {
        "type": "quota", "limit": None, "reset": "never", "meter": None, "overage": False}
    assert app.config["ENTITLEMENT_ALERT_THRESHOLDS"] == (50, 100)
    for bad in ("0,80", "80,101", "eighty"):
        with pytest.raises(ConfigError, match="ENTITLEMENT_ALERT_THRESHOLDS must be"):
            create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": "sqlite://", "ENTITLEMENT_ALERT_THRESHOLDS": bad})


# The free plan, checks and consumes

def test_a_billable_without_a_plan_gets_the_free_plans_features_by_calendar_month(client, key, ada):
    user_id, headers = ada
    shown = client.get("/entitlements", headers=headers)
    assert shown.status_code == 200, shown.json
    now = datetime.now(UTC)
    assert shown.json == {"plan": "free", "as_of": None, "features": {
        "ai.tokens": {"type": "quota", "limit": 100, "used": 0, "reserved": 0, "remaining": 100,
                      "reset_at": next_month(now).strftime("%Y-%m-%dT%H:%M:%SZ"), "overage": False, "source": "plan"},
        "exports": {"type": "boolean", "enabled": False, "source": "plan"},
        "projects": {"type": "quota", "limit": 1, "used": 0, "reserved": 0, "remaining": 1, "reset_at": None,
                     "overage": False, "source": "plan"},
        "sso": {"type": "boolean", "enabled": False, "source": "plan"}}}, "pro's quota seats.ai is left out"


def test_a_consume_takes_all_or_nothing_once_per_identifier(app, client, key, ada):
    user_id, headers = ada
    first = consume(client, key, user_id, 60, "req-1")
    assert (first["allowed"], first["consumed"], first["used"], first["remaining"]) == (True, 60, 60, 40)
    assert consume(client, key, user_id, 60, "req-1") == first, "a repeat returns the first answer"
    refused = consume(client, key, user_id, 41, "req-2")
    assert (refused["allowed"], refused["consumed"], refused["used"], refused["remaining"]) == (False, 0, 60, 40)
    assert consume(client, key, user_id, 41, "req-2") == refused, "a refusal is the first answer too"
    assert check(client, key, user_id, required=40) | {"as_of": None} == {
        **first, "consumed": 0, "allowed": True}, "a check takes nothing"
    assert check(client, key, user_id, required=41)["allowed"] is False
    reused = check(client, key, user_id, expect=422, required=5, consume=True, identifier="req-1")
    assert reused["error"]["code"] == "idempotency_key_reused"
    other = register(client, email="eve@example.com")["id"]
    stolen = check(client, key, other, expect=422, required=60, consume=True, identifier="req-1")
    assert stolen["error"]["code"] == "idempotency_key_reused", "another customer's answer is not given out"
    huge = consume(client, key, user_id, 2**63 - 1, "req-huge")
    assert (huge["allowed"], huge["consumed"]) == (False, 0), "no overflow, no error: a plain no"
    assert consume(client, key, user_id, 40, "req-3")["remaining"] == 0
    assert client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]["used"] == 100
    with app.app_context():
        consumed = db.session.scalar(select(func.sum(EntitlementConsume.consumed)))
        assert consumed == db.session.scalar(select(EntitlementBalance.used)) == 100


def test_a_consume_is_one_statement_on_postgresql_four_elsewhere_and_a_repeat_keeps_nothing(app, client, key, ada):
    """The hot path ``make bench`` measures. On PostgreSQL, once the worker has read the key and the customer, one
    statement (``app.entitlements.fast``); elsewhere, and on the first: the key, the billable with all that decides
    its features (one statement), the take, the claim with the answer. A repeat answers the first answer, stored
    by either path, and its take is rolled back: the ledger is unchanged."""
    user_id, _ = ada
    consume(client, key, user_id, 1, "warm")  # the key's last_used_at is written at most once a minute
    first, statements = statements_of(app, lambda: consume(client, key, user_id, 2, "counted"))
    with app.app_context():
        one_trip = db.engine.dialect.name == "postgresql"
    assert statements == (["WITH"] if one_trip else ["SELECT", "SELECT", "INSERT", "INSERT"]), statements
    assert first["used"] == 3 and first["remaining"] == 97
    assert consume(client, key, user_id, 2, "counted") == first, "the first answer, as stored"
    assert check(client, key, user_id)["used"] == 3, "the repeat's take was rolled back"


def test_booleans_unknown_features_and_features_of_other_plans(client, key, ada):
    user_id, _ = ada
    assert check(client, key, user_id, "sso") | {"as_of": None} == {
        "allowed": False, "feature": "sso", "consumed": 0, "type": "boolean", "enabled": False, "source": "plan",
        "as_of": None}
    assert consume(client, key, user_id, 1, "b-1", feature="sso")["consumed"] == 0
    assert check(client, key, user_id, "seats.ai")["allowed"] is False, "a quota of another plan: not allowed"
    assert consume(client, key, user_id, 1, "q-1", feature="seats.ai")["allowed"] is False
    unknown = check(client, key, user_id, "teleport", expect=422)
    assert unknown["error"]["code"] == "unknown_feature" and unknown["error"]["details"] == {"feature": "teleport"}
    assert check(client, key, 10**9, expect=404)["error"]["code"] == "not_found"
    invalid = check(client, key, user_id, expect=422, consume=True)
    assert invalid["error"]["details"] == {"identifier": ["Required with consume."]}
    assert check(client, key, user_id, expect=422, required=0)["error"]["code"] == "validation_error"


def test_a_reset_never_quota_is_one_period_forever(client, key, ada):
    user_id, _ = ada
    assert consume(client, key, user_id, 1, "p-1", feature="projects")["allowed"] is True
    with time_machine.travel(datetime.now(UTC) + timedelta(days=400)):
        answer = consume(client, key, user_id, 1, "p-2", feature="projects")
    assert (answer["allowed"], answer["used"], answer["reset_at"]) == (False, 1, None)


def test_the_free_plans_quota_resets_with_the_calendar_month(client, key, ada):
    user_id, _ = ada
    assert consume(client, key, user_id, 100, "m-1")["remaining"] == 0
    with time_machine.travel(next_month(datetime.now(UTC)) + timedelta(hours=1)):
        answer = consume(client, key, user_id, 30, "m-2")
    assert (answer["allowed"], answer["used"], answer["remaining"]) == (True, 30, 70)


def test_only_a_service_key_with_entitlements_check_checks(client, runner, ada):
    user_id, headers = ada
    for path in ("/entitlements/check", "/entitlements/reservations"):
        refused = client.post(path, json={"customer": {"user": user_id}, "feature": "sso"}, headers=headers)
        assert (refused.status_code, refused.json["error"]["code"]) == (403, "insufficient_scope")
        assert 'scope="entitlements:check"' in refused.headers["WWW-Authenticate"]
        assert client.post(path, json={}).status_code == 401
    usage_key = service_key(runner, "usage:write")
    assert check(client, usage_key, user_id, "sso", expect=403)["error"]["code"] == "insufficient_scope"
    assert client.get("/entitlements", headers=usage_key).status_code == 401, "a service key reads no user's state"


# Reservations

def reserve(client, key, user_id, amount, identifier, expect=201, **extra):
    answer = client.post("/entitlements/reservations", json={
        "customer": {"user": user_id}, "feature": "ai.tokens", "amount": amount, "identifier": identifier, **extra},
        headers=key)
    assert answer.status_code == expect, answer.json
    return answer.json


def settle(client, key, reservation, amount, expect=200):
    answer = client.post(f"/entitlements/reservations/{reservation}/settle", json={"amount": amount}, headers=key)
    assert answer.status_code == expect, answer.json
    return answer.json


def test_a_reservation_holds_units_until_settled_and_returns_the_rest(client, key, ada):
    user_id, headers = ada
    held = reserve(client, key, user_id, 80, "job-1")
    assert held["id"].startswith("rsv_") and held["amount"] == 80
    assert reserve(client, key, user_id, 80, "job-1") == held, "the same identifier: the same reservation"
    assert consume(client, key, user_id, 30, "c-1")["allowed"] is False, "80 are held of 100"
    exceeded = reserve(client, key, user_id, 21, "job-2", expect=409)["error"]
    assert (exceeded["code"], exceeded["details"]["remaining"]) == ("quota_exceeded", 20)
    assert settle(client, key, held["id"], 81, expect=422)["error"]["code"] == "validation_error"
    settled = settle(client, key, held["id"], 50)
    assert (settled["settled"], settled["status"]) == (50, "settled")
    assert settle(client, key, held["id"], 50) == settled, "settling again answers the same"
    assert settle(client, key, held["id"], 60, expect=409)["error"]["code"] == "conflict"
    assert client.delete(f"/entitlements/reservations/{held['id']}", headers=key).status_code == 409
    quota = client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]
    assert (quota["used"], quota["reserved"], quota["remaining"]) == (50, 0, 50)
    assert client.delete("/entitlements/reservations/rsv_nope", headers=key).status_code == 404
    boolean = client.post("/entitlements/reservations", json={
        "customer": {"user": user_id}, "feature": "sso", "amount": 1, "identifier": "b"}, headers=key)
    assert (boolean.status_code, boolean.json["error"]["code"]) == (422, "validation_error")


def test_a_released_or_expired_reservation_returns_its_units(client, key, ada):
    user_id, headers = ada
    released = reserve(client, key, user_id, 70, "job-1")
    assert client.delete(f"/entitlements/reservations/{released['id']}", headers=key).status_code == 204
    assert client.delete(f"/entitlements/reservations/{released['id']}", headers=key).status_code == 204
    assert settle(client, key, released["id"], 1, expect=409)["error"]["details"] == {"status": "released"}
    expiring = reserve(client, key, user_id, 90, "job-2", ttl=60)
    with time_machine.travel(datetime.now(UTC) + timedelta(seconds=61)):
        quota = client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]
        assert (quota["reserved"], quota["remaining"]) == (0, 100), "an expired reservation holds nothing"
        assert settle(client, key, expiring["id"], 10, expect=409)["error"]["details"] == {"status": "expired"}
        assert consume(client, key, user_id, 100, "c-1")["allowed"] is True
        assert client.delete(f"/entitlements/reservations/{expiring['id']}", headers=key).status_code == 204
    quota = client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]
    assert (quota["used"], quota["reserved"]) == (100, 0)


# Organisations

def test_an_organizations_entitlements_are_its_own_and_any_member_reads_them(app, client, key):
    team = make_team(app, client)
    path = f"/organizations/{team['org']}/entitlements"
    for member in ("ada", "bob", "cy"):
        assert client.get(path, headers=team[member]).json["plan"] == "free"
    outsider = bearer(login(client, register(client, email="eve@example.com")["email"]))
    assert client.get(path, headers=outsider).status_code == 404
    taken = client.post("/entitlements/check", json={"customer": {"organization": team["org"]}, "feature": "ai.tokens",
                                                     "required": 70, "consume": True, "identifier": "o-1"}, headers=key)
    assert taken.json["allowed"] is True
    assert client.get(path, headers=team["cy"]).json["features"]["ai.tokens"]["used"] == 70
    own = client.get("/entitlements", headers=team["ada"]).json["features"]["ai.tokens"]
    assert own["used"] == 0, "the owner's own quota is another billable's"
    assert check(client, key, team["ids"]["ada"], required=71)["allowed"] is True


# Overrides

def test_support_overrides_are_kept_with_who_when_and_why(runner, client, key, ada):
    user_id, headers = ada
    granted = runner.invoke(args=["entitlements", "grant", "--user", str(user_id), "ai.tokens", "--limit", "10",
                                  "--reason", "trial extension", "--by", "grace"])
    assert granted.exit_code == 0, granted.output
    quota = client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]
    assert (quota["limit"], quota["source"]) == (10, "override")
    assert consume(client, key, user_id, 11, "o-1")["allowed"] is False
    until = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    on = runner.invoke(args=["entitlements", "grant", "--user", str(user_id), "sso", "--enabled", "true",
                             "--until", until, "--reason", "pilot", "--by", "grace"])
    assert on.exit_code == 0, on.output
    assert check(client, key, user_id, "sso")["source"] == "override"
    with time_machine.travel(datetime.now(UTC) + timedelta(days=2)):
        assert check(client, key, user_id, "sso")["allowed"] is False, "an override ends at --until"
    shown = runner.invoke(args=["entitlements", "show", "--user", str(user_id)]).output
    assert "ai.tokens\t0 used, 0 reserved of 10\toverride" in shown
    assert "by grace" in shown and "trial extension" in shown and f"until {until}" in shown
    revoked = runner.invoke(args=["entitlements", "revoke", "--user", str(user_id), "ai.tokens", "--by", "grace"])
    assert revoked.exit_code == 0 and "revoked 1 override of ai.tokens" in revoked.output
    assert client.get("/entitlements", headers=headers).json["features"]["ai.tokens"]["source"] == "plan"
    assert "revoked" in runner.invoke(args=["entitlements", "show", "--user", str(user_id)]).output


@pytest.mark.parametrize("args, words", [
    (["ai.tokens", "--enabled", "true"], "'ai.tokens' is a quota: give --limit N"),
    (["sso", "--limit", "3"], "'sso' is a boolean: give --enabled true|false"),
    (["teleport", "--limit", "3"], "no plan of PLAN_FEATURES has the feature 'teleport'"),
    (["sso", "--enabled", "true", "--until", "2001-01-01T00:00:00Z"], "--until must be in the future"),
])
def test_an_override_that_cannot_apply_is_refused_in_one_line(runner, ada, args, words):
    result = runner.invoke(args=["entitlements", "grant", "--user", str(ada[0]), *args, "--reason", "r"])
    assert result.exit_code == 1 and words in result.output and len(result.output.strip().splitlines()) == 1
    assert runner.invoke(args=["entitlements", "show"]).exit_code == 2
    assert runner.invoke(args=["entitlements", "revoke", "--user", str(ada[0]), "sso"]).exit_code == 1


def test_prune_forgets_consume_identifiers_after_the_retention(app, runner, client, key, ada):
    user_id, _ = ada
    consume(client, key, user_id, 5, "old")
    with time_machine.travel(datetime.now(UTC) + timedelta(days=36)):
        result = runner.invoke(args=["entitlements", "prune"])
    assert result.exit_code == 0 and "pruned 1 consume" in result.output
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(EntitlementConsume)) == 0
        assert db.session.scalar(select(EntitlementBalance.used)) == 5, "the ledger keeps what was used"


# Fail closed

def test_a_database_that_cannot_answer_is_a_503_never_an_allowed(make_app, app, client, key, ada, database_url):
    user_id, _ = ada
    assert consume(client, key, user_id, 1, "warm-up")["allowed"] is True  # the key's last_used_at is written
    postgres = database_url.startswith("postgresql")
    options = ({"connect_args": {"options": "-c lock_timeout=300"}} if postgres
               else {"connect_args": {"timeout": 0.3}})
    locked = make_app(PLAN_FEATURES=FEATURES, SQLALCHEMY_ENGINE_OPTIONS=options).test_client()
    with holding_lock(database_url, "LOCK TABLE entitlement_balances IN ACCESS EXCLUSIVE MODE"):
        answer = locked.post("/entitlements/check", json={"customer": {"user": user_id}, "feature": "ai.tokens",
                                                          "consume": True, "identifier": "locked"}, headers=key)
    assert (answer.status_code, answer.json["error"]["code"]) == (503, "service_unavailable")
    assert answer.headers["Retry-After"] == "1"
    assert consume(client, key, user_id, 1, "locked")["used"] == 2, "the refused consume took nothing"
    gone = make_app(PLAN_FEATURES=FEATURES, SQLALCHEMY_DATABASE_URI="postgresql+psycopg://nobody@127.0.0.1:9/none",
                    SQLALCHEMY_ENGINE_OPTIONS={"connect_args": {"connect_timeout": 2}}).test_client()
    for body in ({"feature": "sso"}, {"feature": "ai.tokens", "consume": True, "identifier": "gone"}):
        answer = gone.post("/entitlements/check", json={"customer": {"user": user_id}, **body}, headers=key)
        assert (answer.status_code, answer.json["error"]["code"]) == (503, "service_unavailable"), answer.json


# The plan follows Stripe

def test_quotas_follow_the_entitled_plan_its_periods_and_keep_what_was_used(flow, runner):
    key = service_key(flow.app.test_cli_runner(), "entitlements:check")
    user_id = flow.me()["id"]
    consume(flow.client, key, user_id, 100, "free-1")
    started = flow.intent("basic")
    flow.pay(started["client_secret"])
    flow.deliver()
    shown = flow.client.get("/entitlements", headers=flow.headers).json
    with flow.app.app_context():
        row = db.session.scalars(select(Subscription)).one()
        period_end, confirmed = row.current_period_end, row.provider_updated_at
    assert shown["plan"] == "basic" and shown["as_of"] == confirmed.strftime("%Y-%m-%dT%H:%M:%SZ")
    tokens = shown["features"]["ai.tokens"]
    assert (tokens["limit"], tokens["used"], tokens["reset_at"]) == (1000, 0, period_end.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert consume(flow.client, key, user_id, 900, "basic-1")["remaining"] == 100
    swapped = flow.client.post("/subscription/swap", json={"price": flow.prices["pro"]}, headers=flow.headers)
    assert swapped.status_code == 200, swapped.json
    flow.deliver()
    after = consume(flow.client, key, user_id, 200, "pro-1")
    assert (after["allowed"], after["limit"], after["used"]) == (True, 5000, 1100), "the new limit, used kept"
    assert check(flow.client, key, user_id, "sso")["allowed"] is True
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    renewed = check(flow.client, key, user_id)
    assert (renewed["used"], renewed["limit"]) == (0, 5000), "Stripe's next period starts a new quota"
    assert renewed["reset_at"] > tokens["reset_at"]
    cancelled = flow.client.post("/subscription/cancel", json={}, headers=flow.headers)
    assert cancelled.status_code == 200, cancelled.json
    flow.deliver()
    assert check(flow.client, key, user_id, "sso")["allowed"] is True, "the grace period keeps the plan"
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    ended = check(flow.client, key, user_id)
    assert (ended["limit"], ended["used"]) == (100, 100), "back on free: this month's free quota, as used before"
    assert check(flow.client, key, user_id, "sso")["allowed"] is False
