"""Requests one at a time, timed end to end: logins, first intents, swaps to the row written."""
import json
import time

from app.models import Subscription
from scripts.bench.database import count_rows
from scripts.bench.processes import post_json, request
from scripts.bench.settings import PASSWORD, log
from scripts.bench.webhook_load import percentile


def measure_logins(port, email, count):
    """Time ``count`` sequential logins of ``email``; return a token and the latencies."""
    latencies, failures, token = [], 0, None
    for _ in range(count):
        started = time.perf_counter()
        status, body = post_json(port, "/auth/login", {"email": email, "password": PASSWORD})
        latencies.append((time.perf_counter() - started) * 1000)
        if status != 200:
            failures += 1
        elif token is None:
            token = body["access_token"]
    return token, {"p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
                   "requests": count, "errors": failures}


def measure_intents(port, price, count):
    """Time ``count`` first intents, each for a new user: customer and subscription created at the emulator.

    Registration and login happen before the clock starts; only the intent call is timed.
    """
    tokens = []
    for i in range(count):
        email = f"intent{i}@bench.example"
        post_json(port, "/auth/register", {"email": email, "password": PASSWORD})
        tokens.append(post_json(port, "/auth/login", {"email": email, "password": PASSWORD})[1]["access_token"])
    latencies, failures = [], 0
    for token in tokens:
        started = time.perf_counter()
        status, _ = request(port, "POST", "/subscription/intent", json.dumps({"price": price}).encode(),
                            {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
        latencies.append((time.perf_counter() - started) * 1000)
        failures += status != 201
    result = {"p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99), "requests": count,
              "errors": failures}
    log(f"intent: p50 {result['p50_ms']:.0f} ms over {count}")
    return result


def measure_swaps(port, emulator, db, prices, count):
    """Time ``count`` sequential swaps of one paying user, basic and pro in turn: request to row written.

    The swap writes Stripe's answer in its own transaction, so its answer is the moment the row
    holds the new price; each row is read back to count a swap whose row was not written as an error.
    """
    email = "swap@bench.example"
    post_json(port, "/auth/register", {"email": email, "password": PASSWORD})
    token = post_json(port, "/auth/login", {"email": email, "password": PASSWORD})[1]["access_token"]
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    intent = json.loads(request(port, "POST", "/subscription/intent", json.dumps({"price": prices["basic"]}).encode(),
                                headers)[1])
    emulator.stripe.v1.payment_intents.confirm(intent["client_secret"].split("_secret_")[0],
                                               params={"payment_method": "pm_card_visa"})
    # The intent syncs a pending subscription first: the paid one is stored active, then refused (409).
    request(port, "POST", "/subscription/intent", json.dumps({"price": prices["basic"]}).encode(), headers)
    latencies, failures = [], 0
    for i in range(count):
        price = prices["pro" if i % 2 == 0 else "basic"]
        started = time.perf_counter()
        status, _ = request(port, "POST", "/subscription/swap", json.dumps({"price": price}).encode(), headers)
        latencies.append((time.perf_counter() - started) * 1000)
        stored = count_rows(db, Subscription, Subscription.provider_id == intent["subscription"]["id"],
                            Subscription.provider_price == price)
        failures += status != 200 or stored != 1
    result = {"p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99), "requests": count,
              "errors": failures}
    log(f"swap: p50 {result['p50_ms']:.0f} ms over {count}")
    return result
