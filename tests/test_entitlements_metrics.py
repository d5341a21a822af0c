"""``/metrics`` for entitlements (issue 44, CONTRACT "Entitlements": "``/metrics`` gains checks by outcome and a
consume latency histogram"): ``entitlement_checks_total{outcome}`` and ``entitlement_consume_duration_seconds``.

The counters live in the process (or the multiprocess directory) for the whole run: each test reads them before
and after, and asserts what its own requests added.
"""
from prometheus_client.parser import text_string_to_metric_families

from app.observability.metrics import ENTITLEMENT_OPERATIONS, ENTITLEMENT_OUTCOMES
from tests.support.accounts import register
from tests.support.entitlements import FEATURES, check, consume, service_key


def scrape(client):
    """``{(sample name, labels as sorted tuple): value}`` of the entitlement metrics on ``/metrics``."""
    answer = client.get("/metrics")
    assert answer.status_code == 200
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.get_data(as_text=True))
            if family.name.startswith("entitlement_") for sample in family.samples}


def counts(scraped):
    """Checks by outcome, and observations and their total seconds by operation."""
    return ({outcome: scraped.get(("entitlement_checks_total", (("outcome", outcome),)), 0)
             for outcome in ENTITLEMENT_OUTCOMES},
            {operation: scraped.get(("entitlement_consume_duration_seconds_count", (("operation", operation),)), 0)
             for operation in ENTITLEMENT_OPERATIONS},
            {operation: scraped.get(("entitlement_consume_duration_seconds_sum", (("operation", operation),)), 0)
             for operation in ENTITLEMENT_OPERATIONS})


def added(before, after):
    return {name: after[name] - before[name] for name in after if after[name] != before[name]}


def test_checks_are_counted_by_outcome_and_consumes_timed(make_app, prices):
    app = make_app(PLAN_FEATURES=FEATURES, METRICS_ENABLED=True)
    client, runner = app.test_client(), app.test_cli_runner()
    key = service_key(runner, "entitlements:check")
    user_id = register(client)["id"]
    checks, timed, seconds = counts(scrape(client))

    assert consume(client, key, user_id, 60, "m-1")["allowed"] is True
    assert consume(client, key, user_id, 60, "m-1")["consumed"] == 60, "the first answer again"
    assert consume(client, key, user_id, 41, "m-2")["allowed"] is False
    assert check(client, key, user_id, "sso")["allowed"] is False
    assert check(client, key, user_id, required=40)["allowed"] is True
    assert check(client, key, user_id, "teleport", expect=422)["error"]["code"] == "unknown_feature"
    gone = make_app(PLAN_FEATURES=FEATURES, SQLALCHEMY_DATABASE_URI="postgresql+psycopg://nobody@127.0.0.1:9/none",
                    SQLALCHEMY_ENGINE_OPTIONS={"connect_args": {"connect_timeout": 2}}).test_client()
    down = gone.post("/entitlements/check", json={"customer": {"user": user_id}, "feature": "sso"}, headers=key)
    assert down.status_code == 503
    held = client.post("/entitlements/reservations", json={"customer": {"user": user_id}, "feature": "ai.tokens",
                                                           "amount": 10, "identifier": "r-1"}, headers=key)
    assert held.status_code == 201, held.json
    settled = client.post(f"/entitlements/reservations/{held.json['id']}/settle", json={"amount": 4}, headers=key)
    assert settled.status_code == 200, settled.json
    refused = client.post("/entitlements/reservations", json={"customer": {"user": user_id}, "feature": "ai.tokens",
                                                              "amount": 1000, "identifier": "r-2"}, headers=key)
    assert refused.status_code == 409, "a refused reservation is timed too"

    scraped = scrape(client)
    checks_after, timed_after, seconds_after = counts(scraped)
    assert added(checks, checks_after) == {"allowed": 2, "duplicate": 1, "denied": 2, "unknown_feature": 1,
                                           "unavailable": 1}
    assert added(timed, timed_after) == {"consume": 3, "reserve": 2, "settle": 1}, "checks without consume: untimed"
    assert all(seconds_after[operation] > seconds[operation] for operation in ENTITLEMENT_OPERATIONS)
    assert ("entitlement_consume_duration_seconds_bucket", (("le", "0.005"), ("operation", "consume"))) in scraped, \
        "buckets fine enough to tell a p99 under 10 ms"
