"""One user's token cannot spend the Stripe account's request rate (issue 25 item 4).

Every endpoint that calls Stripe for a user shares ``PROVIDER_CALLS_RATE_LIMIT`` per user, counted on
the limiter's store; past it the answer is ``429 rate_limited`` with ``Retry-After`` and Stripe is not
asked. Counted at the emulator (``GET /_emulator/requests``).
"""
import pytest

from app import create_app
from app.billing.call_costs import MOST_PROVIDER_CALLS, PROVIDER_CALL_COSTS
from app.config_values import ConfigError
from tests.support.accounts import bearer, login, register
from tests.support.billing import post, subscribe
from tests.support.config import BASE_CONFIG

LIMIT = 50  # above the dearest request (MOST_PROVIDER_CALLS), which start-up requires


@pytest.fixture
def live_config():
    return {"PROVIDER_CALLS_RATE_LIMIT": f"{LIMIT} per minute"}


def stripe_calls(flow):
    return flow.emulator.control("GET", "requests")["total"]


def test_the_endpoints_that_call_stripe_share_one_limit_per_user(flow):
    subscribe(flow)  # the intent is the first request, counted at the most Stripe calls it makes
    used = PROVIDER_CALL_COSTS["subscription.intent"]
    for path in ("/subscription/invoices", "/subscription/invoices/upcoming",
                 f"/subscription/swap/preview?price={flow.prices['basic']}"):
        assert flow.client.get(path, headers=flow.headers).status_code == 200
        used += 1 if "preview" not in path else PROVIDER_CALL_COSTS["subscription.swap_preview"]
    while used + PROVIDER_CALL_COSTS["subscription.cancel"] <= LIMIT:
        post(flow, "/subscription/cancel")
        used += PROVIDER_CALL_COSTS["subscription.cancel"]
    while used < LIMIT:
        assert flow.client.get("/subscription/invoices", headers=flow.headers).status_code == 200
        used += 1
    before = stripe_calls(flow)
    for method, path in (("GET", "/subscription/invoices"), ("POST", "/subscription/swap"),
                         ("POST", "/subscription/payment-method"), ("POST", "/subscription/portal"),
                         ("POST", "/subscription/intent"), ("GET", "/subscription/invoices/upcoming")):
        answer = flow.client.open(path, method=method, headers=flow.headers, json={"price": flow.prices["pro"]})
        assert answer.status_code == 429, (path, answer.json)
        assert answer.json["error"]["code"] == "rate_limited" and int(answer.headers["Retry-After"]) >= 1
    assert stripe_calls(flow) == before, "refused before any provider call"
    assert flow.client.get("/subscription", headers=flow.headers).status_code == 200, "reading the row is free"

    register(flow.client, email="bob@example.com")
    bob = bearer(login(flow.client, email="bob@example.com"))
    assert flow.client.post("/subscription/intent", json={"price": flow.prices["pro"]}, headers=bob).status_code \
        == 201, "another user has a limit of their own"


def test_the_limit_is_shared_by_every_worker_on_the_store(make_app, redis_url, emulator):
    """Two app processes' worth of state (two apps) on one Redis count one limit."""
    limit = MOST_PROVIDER_CALLS
    apps = [make_app(RATELIMIT_STORAGE_URI=redis_url, PROVIDER_CALLS_RATE_LIMIT=f"{limit} per minute")
            for _ in range(2)]
    register(apps[0].test_client())
    headers = bearer(login(apps[0].test_client()))
    answers = [app.test_client().get("/subscription/invoices", headers=headers).status_code
               for app in (apps[0], apps[1]) * (limit // 2 + 1)]
    assert answers[:limit + 1] == [200] * limit + [429]


def test_a_limit_below_the_dearest_request_is_refused_at_start():
    with pytest.raises(ConfigError, match=rf"^PROVIDER_CALLS_RATE_LIMIT must allow at least {MOST_PROVIDER_CALLS} "
                                          "Stripe calls") as raised:
        create_app({**BASE_CONFIG, "PROVIDER_CALLS_RATE_LIMIT": f"{MOST_PROVIDER_CALLS - 1} per minute"})
    assert "\n" not in str(raised.value)
