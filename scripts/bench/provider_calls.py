"""How many Stripe calls a second one user's token can cause (issue 25 item 4), with and without
``PROVIDER_CALLS_RATE_LIMIT``.

A read-only token hammers ``GET /subscription/invoices`` (one Stripe call per request) from
``THREADS`` threads for a few seconds; the emulator counts the Stripe requests that arrive. The
service runs in this process on SQLite (werkzeug's threaded server), the emulator beside it.
``make bench`` prints the table after its own: Stripe calls/s and answers/s by status, per
configuration, the median of its runs. The target: with the default limit, at most the limit's
count of calls reach Stripe in the window (60), whatever the client sends.

    .venv/bin/python -m scripts.bench.provider_calls
"""
import statistics
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import requests
import stripe
from flask_migrate import upgrade
from werkzeug.serving import make_server

from app import create_app
from app.extensions import db
from app.schema import bind as bind_migrations
from scripts.stripe_emulator.testing import RunningEmulator, _QuietHandler

THREADS = 8
# The default limit's count: no more may reach Stripe in a window shorter than its minute.
TARGET_CALLS = 60
MIGRATIONS = str(Path(__file__).resolve().parent.parent.parent / "migrations")
# "Before": a limit no client reaches, as if there were none; "after": the default.
LIMITS = {"no limit (before)": "1000000 per second", "default (after)": "60 per minute"}


def serve(limit, emulator, database):
    """Start the service with ``limit``; return ``(base_url, server, price)``."""
    client = stripe.StripeClient("sk_test_bench", base_addresses={"api": emulator.url})
    product = client.v1.products.create(params={"name": "Bench"})
    price = client.v1.prices.create(params={"product": product.id, "unit_amount": 900, "currency": "usd",
                                            "recurring": {"interval": "month"}}).id
    app = create_app({"SQLALCHEMY_DATABASE_URI": f"sqlite:///{database}", "SECRET_KEY": "bench",
                      "PROVIDER_API_KEY": "sk_test_bench", "PROVIDER_API_BASE": emulator.url,
                      "PROVIDER_WEBHOOK_SECRET": "whsec_bench", "PROVIDER_PLANS": {price: "pro"},
                      "PROVIDER_CALLS_RATE_LIMIT": limit, "LOG_LEVEL": "WARNING"})
    with bind_migrations(app).app_context():
        upgrade(directory=MIGRATIONS)
        db.engine.dispose()
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=_QuietHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server, price


def reader_token(base, price, emulator):
    """A subscribed user, and a personal token of theirs with ``subscription:read`` only."""
    account = {"email": f"{time.monotonic_ns()}@example.com", "password": "correct horse battery", "name": "B"}
    requests.post(f"{base}/auth/register", json=account, timeout=10).raise_for_status()
    credentials = {"email": account["email"], "password": account["password"]}
    login = requests.post(f"{base}/auth/login", json=credentials, timeout=10).json()["access_token"]
    headers = {"Authorization": f"Bearer {login}"}
    secret = requests.post(f"{base}/subscription/intent", json={"price": price}, headers=headers, timeout=10)
    intent = secret.json()["client_secret"].split("_secret_")[0]
    stripe.StripeClient("sk_test_bench", base_addresses={"api": emulator.url}).v1.payment_intents.confirm(
        intent, params={"payment_method": "pm_card_visa"})
    made = requests.post(f"{base}/auth/tokens", headers=headers, timeout=10,
                         json={"name": "hostile script", "abilities": ["subscription:read"]}).json()
    return made["access_token"]


def hammer(base, token, seconds):
    """Return the statuses of ``THREADS`` threads' requests during ``seconds``."""
    statuses, deadline = Counter(), time.monotonic() + seconds
    lock = threading.Lock()

    def worker():
        session = requests.Session()
        while time.monotonic() < deadline:
            status = session.get(f"{base}/subscription/invoices", headers={"Authorization": f"Bearer {token}"},
                                 timeout=10).status_code
            with lock:
                statuses[status] += 1

    threads = [threading.Thread(target=worker) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def measure(limit, emulator, workdir, seconds, runs):
    """Return ``(stripe calls/s, answers/s by status)``, medians of ``runs`` fresh users."""
    calls, answers = [], []
    for run in range(runs):
        base, server, price = serve(limit, emulator, Path(workdir) / f"{abs(hash(limit))}-{run}.db")
        token = reader_token(base, price, emulator)
        before = emulator.control("GET", "requests")["total"]
        statuses = hammer(base, token, seconds)
        calls.append((emulator.control("GET", "requests")["total"] - before) / seconds)
        answers.append({status: count / seconds for status, count in statuses.items()})
        server.shutdown()
    median = statistics.median(calls)
    return median, answers[calls.index(median)] if median in calls else answers[0]


def provider_call_table(seconds=3, runs=3):
    """Measure each of ``LIMITS``; return ``(table text, raw results, whether the target is met)``."""
    emulator = RunningEmulator().start()
    rows, raw = [], {}
    try:
        with tempfile.TemporaryDirectory() as workdir:
            for name, limit in LIMITS.items():
                calls, answers = measure(limit, emulator, workdir, seconds, runs)
                raw[name] = {"limit": limit, "calls_per_s": calls, "answers_per_s": answers}
                shown = ", ".join(f"{status}: {rate:.0f}/s" for status, rate in sorted(answers.items()))
                rows.append(f"| {name} | `{limit}` | {calls:.1f} | {calls * seconds:.0f} | {shown} |")
    finally:
        emulator.stop()
    met = raw["default (after)"]["calls_per_s"] * seconds <= TARGET_CALLS
    table = "\n".join([
        f"One read-only token, {THREADS} threads x {seconds} s on GET /subscription/invoices, median of {runs}; "
        f"target: at most {TARGET_CALLS} Stripe calls with the default limit ({'OK' if met else 'MISS'})",
        "| PROVIDER_CALLS_RATE_LIMIT | value | Stripe calls/s | Stripe calls | answers |", "|---|---|---|---|---|",
        *rows])
    return table, raw, met


if __name__ == "__main__":
    print(provider_call_table()[0])
