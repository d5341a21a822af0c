"""Token security: strong secrets stored as digests only, every wrong credential 401, no login oracle,
brute force rate limited, and no secret in any log (CONTRACT "Token", "Endpoints")."""
import hashlib
import json
import logging
import secrets
import statistics
import time

import pytest
import time_machine
from sqlalchemy import text

from app.auth import tokens
from app.extensions import db
from app.models import User
from tests.depth import budget
from tests.signing import WEBHOOK_SECRET, sign
from tests.support.accounts import PASSWORD, bearer, login, register
from tests.support.reliability import TALLY, WORKERS


def test_token_secrets_come_from_secrets_with_at_least_240_bits(app, client, user, monkeypatch):
    drawn = []
    real = secrets.token_urlsafe

    def recording(nbytes=None):
        drawn.append(nbytes)
        return real(nbytes)

    monkeypatch.setattr(tokens.secrets, "token_urlsafe", recording)
    plain = [login(client)["access_token"]]
    with app.app_context():
        owner = db.session.get(User, user["id"])
        plain += [tokens.issue(owner)[1] for _ in range(200)]
        db.session.commit()
    assert len(drawn) == len(plain) and min(drawn) * 8 >= 240
    token_secrets = [p.split("|", 1)[1] for p in plain]
    assert min(len(s) for s in token_secrets) >= 40 and len(set(token_secrets)) == len(token_secrets)


def test_only_sha256_digests_of_secrets_are_stored(app, client, user):
    plain = [login(client)["access_token"] for _ in range(3)]
    with app.app_context():
        rows = db.session.execute(text("SELECT * FROM personal_access_tokens")).mappings().all()
    stored = " ".join(str(value) for row in rows for value in row.values())
    for token in plain:
        token_id, secret = token.split("|", 1)
        assert secret not in stored
        row = next(r for r in rows if str(r["id"]) == token_id)
        assert row["token"] == hashlib.sha256(secret.encode()).hexdigest()


def test_wrong_other_deleted_and_expired_tokens_are_all_401(make_app):
    app = make_app(AUTH_TOKEN_EXPIRATION="60")
    client = app.test_client()
    register(client, email="ada@example.com")
    register(client, email="bob@example.com")
    ada, bob = login(client, "ada@example.com")["access_token"], login(client, "bob@example.com")["access_token"]
    deleted = login(client, "ada@example.com")["access_token"]
    assert client.post("/auth/logout", headers={"Authorization": f"Bearer {deleted}"}).status_code == 204
    ada_id, ada_secret = ada.split("|", 1)
    bob_id, bob_secret = bob.split("|", 1)
    wrong = {
        "wrong secret": f"{ada_id}|{secrets.token_urlsafe(32)}",
        "another user's secret": f"{ada_id}|{bob_secret}",
        "another user's id": f"{bob_id}|{ada_secret}",
        "deleted": deleted,
        "secret without id": ada_secret,
    }
    for what, token in wrong.items():
        response = client.get("/auth/me", headers={"Authorization": f"Bearer {token}"})
        TALLY["inputs_tried"] += 1
        assert response.status_code == 401 and response.json["error"]["code"] == "unauthenticated", what
    with time_machine.travel(time.time() + 61 * 60):
        for path in ("/auth/me", "/auth/token/refresh"):
            method = client.get if path == "/auth/me" else client.post
            response = method(path, headers={"Authorization": f"Bearer {ada}"})
            assert response.status_code == 401, ("expired", path)
    assert client.get("/auth/me", headers={"Authorization": f"Bearer {bob}"}).status_code == 200


def _spread(samples):
    middle = statistics.median(samples)
    return statistics.median(abs(s - middle) for s in samples)


def test_unknown_email_and_wrong_password_cannot_be_told_apart_with_production_argon2(make_app):
    """Same status and body; median times within a tolerance derived from the spread.

    Production costs (``app.config.DEFAULTS``); the two kinds of attempt are interleaved so that a
    load spike on the machine hits both alike. Skipping the hash for an unknown email would show
    as a difference of a whole Argon2 verification, far beyond the tolerance.
    """
    from app.config import DEFAULTS

    app = make_app(PASSWORD_HASH_TIME_COST=DEFAULTS["PASSWORD_HASH_TIME_COST"],
                   PASSWORD_HASH_MEMORY_COST=DEFAULTS["PASSWORD_HASH_MEMORY_COST"],
                   AUTH_LOGIN_RATE_LIMIT="100000 per minute")
    client = app.test_client()
    register(client)
    times = {"unknown": [], "wrong": []}
    answers = {"unknown": set(), "wrong": set()}
    attempts = {"unknown": lambda n: {"email": f"nobody{n}@example.com", "password": PASSWORD},
                "wrong": lambda n: {"email": "ada@example.com", "password": f"{PASSWORD}{n}"}}
    # Two rounds of warm-up (the dummy hash is made on first use), then 12 pairs (20 under make test-deep).
    for n in range(-2, budget(quick=12, deep=20)):
        for kind in (("unknown", "wrong") if n % 2 else ("wrong", "unknown")):
            started = time.perf_counter()
            response = client.post("/auth/login", json=attempts[kind](n))
            elapsed = time.perf_counter() - started
            if n >= 0:
                times[kind].append(elapsed)
                answers[kind].add((response.status_code, response.get_data()))
    TALLY["inputs_tried"] += sum(len(t) for t in times.values())
    assert answers["unknown"] == answers["wrong"] and len(answers["wrong"]) == 1
    (status, _), = answers["wrong"]
    assert status == 401
    unknown, wrong = statistics.median(times["unknown"]), statistics.median(times["wrong"])
    tolerance = max(4 * max(_spread(times["unknown"]), _spread(times["wrong"])), 0.2 * min(unknown, wrong))
    TALLY["login_timing_median_diff_us"] = max(TALLY["login_timing_median_diff_us"],
                                               round(abs(unknown - wrong) * 1e6))
    assert abs(unknown - wrong) <= tolerance, (unknown, wrong, tolerance)
    assert min(unknown, wrong) > 0.005, "production Argon2 costs are in force"


def test_brute_force_on_login_gets_429_through_gunicorn(gunicorn):
    """Across four workers. KNOWN LIMIT: with the default ``memory://`` storage each worker counts
    on its own, so an attacker gets the limit times the workers (40 a minute, not 10) before the
    429s; a shared ``RATELIMIT_STORAGE_URI`` (Redis) makes it the configured limit. This test pins
    the bound that holds today, so a regression beyond it fails.

    The kernel does not hand connections to the workers evenly, so which guess meets the 429 varies;
    what does not is the total: guesses go on until every worker has answered its ten, and from
    then on (a moving window, so no window boundary resets a count) every guess is refused."""
    assert gunicorn.post("/auth/register", json={"email": "ada@example.com", "password": PASSWORD}).status_code == 201
    statuses = []
    while statuses.count(401) < 10 * WORKERS and len(statuses) < 400:
        statuses.append(gunicorn.post("/auth/login", json={"email": "ada@example.com",
                                                            "password": f"guess {len(statuses)}"}).status_code)
    statuses += [gunicorn.post("/auth/login", json={"email": "ada@example.com", "password": f"more {n}"}).status_code
                 for n in range(10)]
    TALLY["inputs_tried"] += len(statuses)
    TALLY["brute_force_guesses_before_429"] = max(TALLY["brute_force_guesses_before_429"], statuses.count(401))
    assert set(statuses) == {401, 429}
    assert statuses.count(401) == 10 * WORKERS
    assert statuses[-10:] == [429] * 10
    limited = gunicorn.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD})
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) > 0


def test_a_shared_limit_store_holds_brute_force_to_the_configured_limit(redis_url, gunicorn):
    """With Redis as ``RATELIMIT_STORAGE_URI`` (the production set-up of docs/operating.md) the four workers
    share one count: exactly ten guesses a minute, then 429."""
    assert gunicorn.post("/auth/register", json={"email": "ada@example.com", "password": PASSWORD}).status_code == 201
    statuses = [gunicorn.post("/auth/login", json={"email": "ada@example.com", "password": f"guess {n}"}).status_code
                for n in range(20)]
    TALLY["inputs_tried"] += len(statuses)
    TALLY["brute_force_guesses_before_429_shared"] = statuses.count(401)
    assert statuses == [401] * 10 + [429] * 10


@pytest.mark.parametrize("gunicorn", [{"LOG_FORMAT": "text"}, {"LOG_FORMAT": "json"}], indirect=True,
                         ids=["text", "json"])
def test_no_password_or_token_appears_in_logs(make_app, caplog, capsys, gunicorn, request):
    log_format = request.node.callspec.params["gunicorn"]["LOG_FORMAT"]
    app = make_app(LOG_FORMAT=log_format)
    client = app.test_client()
    password = "unguessable-Pa55word-for-log-test"
    signed = sign(b'{"id": "evt_log_test"}')
    with caplog.at_level(logging.DEBUG):
        client.post("/provider/webhook", data=b'{"id": "evt_log_test"}', headers={"Stripe-Signature": signed})
        client.post("/auth/register", json={"email": "log@example.com", "password": password})
        client.post("/auth/login", json={"email": "log@example.com", "password": password + "x"})
        client.post("/auth/login", json={"email": "nobody@example.com", "password": password})
        token = login(client, "log@example.com", password)["access_token"]
        client.get("/auth/me", headers=bearer({"access_token": token}))
        refreshed = client.post("/auth/token/refresh", headers=bearer({"access_token": token})).json["access_token"]
        client.get("/auth/me", headers=bearer({"access_token": token}))  # a 401 for the rotated one
        client.post("/auth/logout", headers=bearer({"access_token": refreshed}))
    # The same over gunicorn, whose access and error logs (debug level) are captured too.
    over_http = gunicorn.post("/auth/login", json={"email": "log@example.com", "password": password}).json()
    gunicorn.get("/auth/me", headers=bearer(over_http))
    gunicorn.post("/auth/login", json={"email": "log@example.com", "password": password + "x"})
    gunicorn.post("/auth/logout", headers=bearer(over_http))
    gunicorn.get("/auth/me", headers=bearer(over_http))
    gunicorn.post("/provider/webhook", data=b'{"id": "evt_log_test"}', headers={"Stripe-Signature": signed})
    logs = {"in-process": caplog.text + " ".join(repr(r.args) for r in caplog.records),
            "in-process output": capsys.readouterr().err, "gunicorn": gunicorn.log.read_text()}
    assert "/auth/login" in logs["gunicorn"], "the access log is captured"
    assert "/auth/login" in logs["in-process output"], "the app's request log is captured"
    if log_format == "json":
        # The app's own output, in-process and under gunicorn, is one JSON object per line.
        app_lines = [line for line in (logs["in-process output"] + logs["gunicorn"]).splitlines()
                     if '"logger": "app.' in line]
        assert app_lines and all(isinstance(json.loads(line), dict) for line in app_lines)
    for where, text_ in logs.items():
        for secret in (password, token.split("|")[1], refreshed.split("|")[1], over_http["access_token"].split("|")[1],
                       signed.split("v1=")[1], WEBHOOK_SECRET):
            assert secret not in text_, where


@pytest.mark.parametrize("header", ["Bearer ", "Bearer 1|", "Bearer |abc", "Bearer 99999999999999999999999|x",
                                    "Bearer -1|x", "Bearer 1|x\x00", "Basic YWRhOnB3"])
def test_malformed_credentials_are_401_not_5xx(client, user, header):
    response = client.get("/auth/me", headers={"Authorization": header})
    TALLY["inputs_tried"] += 1
    assert response.status_code == 401
