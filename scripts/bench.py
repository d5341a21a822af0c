"""Benchmarks with targets (issue 6): authenticated requests, webhook ingest, prune, login.

``python -m scripts.bench [--db sqlite|postgres|both] [--duration S] [--quick]`` (``make bench``).

The service runs the way production runs it: gunicorn, 2 sync workers, on a throwaway PostgreSQL
database (``subs_bench_<random>`` on 127.0.0.1:5432, user ``postgres``, dropped at the end) and/or
a temporary SQLite file, migrated with ``flask db upgrade``. It serves ``scripts.bench_wsgi:app``:
the real app plus one bench-only route, ``GET /_bench/bare``, the ceiling that touches no database.
Load comes from other processes on loopback: wrk (installed with apt-get when missing) for the
plain requests, and a bounded pool of threads with ``http.client`` for the signed webhooks. All
traffic goes to 127.0.0.1. A local Stripe emulator is started as the provider, though no measured
code path is meant to call it.

Prints one markdown table (every figure from this run) and writes the raw results to
``bench-results/latest.json``. Targets are ratios where they can be, because absolute figures
drift on shared machines; the absolute ones are set for a 2-core machine, load generator included.
"""
import argparse
import copy
import hashlib
import hmac
import http.client
import itertools
import json
import os
import platform
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV_PYTHON = REPO / ".venv" / "bin" / "python"

# ``python scripts/bench.py`` with another interpreter: re-run in the project's virtualenv, from the
# repo root, so ``app`` and ``scripts`` import and gunicorn/flask are the pinned ones.
if VENV_PYTHON.exists() and Path(sys.prefix).resolve() != VENV_PYTHON.parent.parent.resolve():
    os.execv(str(VENV_PYTHON), [str(VENV_PYTHON), "-m", "scripts.bench", *sys.argv[1:]])
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sqlalchemy import create_engine, func, insert, select, text  # noqa: E402

from app import config as app_config  # noqa: E402
from app.models import AccessToken, Notification, Subscription, SubscriptionItem, User, WebhookEvent  # noqa: E402

HOST = "127.0.0.1"
PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=postgres"
WEBHOOK_SECRET = "whsec_bench_" + secrets.token_hex(16)
PRICE = "price_bench_pro"
PASSWORD = "bench password 123"
CONNECTIONS = 16
WEBHOOK_USERS = 200
OTHER_TOKENS = 10_000
PRUNE_TOKENS = 1_000_000
LOGINS = 20
INTENTS = 20
FIXTURE = next((REPO / "tests" / "fixtures" / "stripe_events").glob("03_customer.subscription.updated__*.json"))
RESULTS = REPO / "bench-results" / "latest.json"

# The targets (issue 6). Never loosen one to make a run pass: fix the cause or report the miss.
ME_MIN_SHARE_OF_BARE = 0.50
ME_MAX_P99_MS = 25.0
TOKENS_MAX_COST = 0.10
WEBHOOK_MIN_EVENTS_PER_S = 300.0
WEBHOOK_MAX_P99_MS = 60.0
PRUNE_MAX_SECONDS = 20.0
PRUNE_MAX_RSS_MB = 200.0


def log(message):
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def ensure_wrk():
    """Return the path of wrk, installing the Debian package when it is missing (we run as root)."""
    found = shutil.which("wrk")
    if found:
        return found
    log("wrk is missing: apt-get install -y wrk")
    apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    if subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], env=apt).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=apt, check=True)
        subprocess.run(["apt-get", "install", "-y", "-q", "wrk"], env=apt, check=True)
    return shutil.which("wrk") or sys.exit("wrk could not be installed")


def percentile(values, fraction):
    """Return the ``fraction`` (0..1) percentile of ``values`` by nearest rank, or ``None`` if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


# --- processes ------------------------------------------------------------------------------------


class Service:
    """A child process (gunicorn or the emulator) with its output in a log file; stopped on exit."""

    def __init__(self, name, argv, env, workdir):
        self.name = name
        self.log_path = Path(workdir) / f"{name}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_http(self, port, path, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                status, _ = request(port, "GET", path, timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"{self.name} did not come up; its log:\n{self.log_path.read_text()[-4000:]}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def request(port, method, path, body=None, headers=None, timeout=30):
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post_json(port, path, payload):
    status, body = request(port, "POST", path, json.dumps(payload).encode(), {"Content-Type": "application/json"})
    return status, json.loads(body or b"null")


def create_scoped_token(port, token):
    """Create a personal access token with only ``profile:read``, what ``/auth/me`` needs; return its plain text."""
    status, body = request(port, "POST", "/auth/tokens",
                           json.dumps({"name": "bench", "abilities": ["profile:read"]}).encode(),
                           {"Content-Type": "application/json", "Authorization": f"Bearer {token}"})
    if status != 201:
        raise RuntimeError(f"creating a scoped token failed: {status} {body!r}")
    return json.loads(body)["access_token"]


# --- databases ------------------------------------------------------------------------------------


class Database:
    """A throwaway database: ``url`` for SQLAlchemy and the service; ``drop()`` removes it."""

    def __init__(self, kind, workdir):
        self.kind = kind
        if kind == "postgres":
            import psycopg

            self.name = f"subs_bench_{secrets.token_hex(4)}"
            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
            self.url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{self.name}"
        else:
            self.name = str(Path(workdir) / "bench.db")
            self.url = f"sqlite:///{self.name}"
        self.engine = create_engine(self.url)

    def drop(self):
        self.engine.dispose()
        if self.kind == "postgres":
            import psycopg

            with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
        else:
            for suffix in ("", "-wal", "-shm"):
                Path(self.name + suffix).unlink(missing_ok=True)


def service_env(db, emulator_url, intent_price):
    env = {k: v for k, v in os.environ.items() if k not in app_config.DEFAULTS and not k.startswith("FLASK_")}
    env.update(
        DATABASE_URL=db.url,
        PROVIDER_WEBHOOK_SECRET=WEBHOOK_SECRET,
        PROVIDER_API_KEY="sk_test_bench",
        PROVIDER_API_BASE=emulator_url,
        PROVIDER_PLANS=json.dumps({PRICE: "pro", intent_price: "pro"}),
        AUTH_LOGIN_RATE_LIMIT="100000 per minute",
        LOG_LEVEL="WARNING",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def seed_other_tokens(db, user_id, count):
    """Give ``user_id`` ``count`` more valid tokens (executemany of precomputed rows)."""
    now = datetime.now(UTC)
    rows = [
        {"user_id": user_id, "name": "bench", "token": hashlib.sha256(f"bench-{i}".encode()).hexdigest(),
         "abilities": [], "created_at": now, "updated_at": now, "expires_at": now + timedelta(days=30)}
        for i in range(count)
    ]
    with db.engine.begin() as conn:
        conn.execute(insert(AccessToken.__table__), rows)


def seed_subscribers(db, count):
    """Create ``count`` users with a customer id and one active subscription each; return the customer ids."""
    now = datetime.now(UTC)
    old = datetime(2020, 1, 1, tzinfo=UTC)
    customers = [f"cus_bench{i:05d}" for i in range(count)]
    with db.engine.begin() as conn:
        conn.execute(insert(User.__table__), [
            {"email": f"{c}@bench.example", "password_hash": "x", "provider_id": c, "plan": "pro",
             "created_at": now, "updated_at": now} for c in customers])
        users = dict(conn.execute(select(User.provider_id, User.id).where(User.provider_id.in_(customers))).all())
        conn.execute(insert(Subscription.__table__), [
            {"user_id": users[c], "type": "default", "provider_id": c.replace("cus_", "sub_"),
             "provider_status": "active", "provider_price": PRICE, "quantity": 1, "cancel_at_period_end": False,
             "current_period_end": now + timedelta(days=30), "provider_created_at": old, "provider_updated_at": old,
             "created_at": now, "updated_at": now} for c in customers])
        subs = dict(conn.execute(select(Subscription.provider_id, Subscription.id)
                                 .where(Subscription.provider_id.like("sub_bench%"))).all())
        conn.execute(insert(SubscriptionItem.__table__), [
            {"subscription_id": subs[c.replace("cus_", "sub_")], "provider_id": c.replace("cus_", "si_"),
             "provider_product": "prod_bench", "provider_price": PRICE, "quantity": 1,
             "created_at": now, "updated_at": now} for c in customers])
    return customers


def seed_expired_tokens(db, user_id, count):
    """Insert ``count`` tokens that expired two days ago, in one statement."""
    now = datetime.now(UTC)
    params = {"uid": user_id, "n": count, "expired": now - timedelta(days=2), "created": now - timedelta(days=3)}
    if db.kind == "postgres":
        statement = text(
            "INSERT INTO personal_access_tokens (user_id, name, token, abilities, expires_at, created_at, updated_at) "
            "SELECT :uid, 'bench-expired', 'x' || lpad(to_hex(g), 63, '0'), '[]'::json, :expired, :created, :created "
            "FROM generate_series(1, :n) AS g")
    else:
        # SQLite keeps UTC datetimes as naive text in SQLAlchemy's format; compare like with like.
        fmt = "%Y-%m-%d %H:%M:%S.%f"
        params.update(expired=params["expired"].strftime(fmt), created=params["created"].strftime(fmt))
        statement = text(
            "WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < :n) "
            "INSERT INTO personal_access_tokens (user_id, name, token, abilities, expires_at, created_at, updated_at) "
            "SELECT :uid, 'bench-expired', printf('x%063x', g), '[]', :expired, :created, :created FROM s")
    with db.engine.begin() as conn:
        conn.execute(statement, params)
    # Statistics as autovacuum/autoanalyze would have them on a table that grew over time.
    with db.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("ANALYZE personal_access_tokens"))


def count_rows(db, model, *where):
    with db.engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(model.__table__).where(*where))


# --- load ------------------------------------------------------------------------------------------

_DURATION = re.compile(r"([\d.]+)(us|ms|s|m)\b")
_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(token):
    match = _DURATION.fullmatch(token.strip())
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


def parse_wrk(output):
    """Return requests/s, p50/p99 (ms), request and error counts from ``wrk --latency`` output."""
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}
    for pct in ("50", "75", "90", "99"):
        result[f"p{pct}_ms"] = _ms(re.search(rf"^\s+{pct}(?:\.0+)?%\s+(\S+)", output, re.M).group(1))
    result["requests"] = int(re.search(r"(\d+) requests in", output).group(1))
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    result["socket_errors"] = dict(zip(("connect", "read", "write", "timeout"),
                                       map(int, socket_errors.groups()), strict=True)) if socket_errors else {}
    result["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    result["errors"] = sum(result["socket_errors"].values()) + result["non_2xx"]
    return result


def run_wrk(wrk, port, path, duration, workdir, token=None, connections=CONNECTIONS):
    script = Path(workdir) / "bench.lua"
    lines = ['wrk.headers["Accept"] = "application/json"']
    if token:
        lines.append(f'wrk.headers["Authorization"] = "Bearer {token}"')
    script.write_text("\n".join(lines) + "\n")
    argv = [wrk, "-t2", f"-c{connections}", f"-d{duration}s", "--latency", "--timeout", "5s", "-s", str(script),
            f"http://{HOST}:{port}{path}"]
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    result = parse_wrk(output)
    log(f"wrk {path}: {result['rps']:.0f} req/s p50 {result['p50_ms']:.1f} ms p99 {result['p99_ms']:.1f} ms "
        f"errors {result['errors']}")
    return result


def sign(payload, secret, timestamp=None):
    """Return a ``Stripe-Signature`` header for ``payload`` (bytes), as Stripe computes it."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def webhook_payloads(customers, rounds):
    """Distinct ``customer.subscription.updated`` events, round-robin over the subscriptions.

    Shaped like fixture 03. ``created`` strictly increases per subscription (never a tie, which
    would make the service read the live subscription from the provider). ``previous_attributes``
    alternates a metadata change (no notification) with a scheduled/withdrawn cancellation (a
    notification), and never names the status or payment method, so no listener calls the provider.
    """
    template = json.loads(FIXTURE.read_text())
    period_end = int(time.time()) + 30 * 86400
    payloads = []
    for k in range(rounds):
        scheduled = k % 4 == 1
        previous = {"metadata": {}} if k % 2 == 0 else {"cancel_at_period_end": not scheduled}
        for customer in customers:
            event = copy.deepcopy(template)
            sub = event["data"]["object"]
            sub_id, item_id = customer.replace("cus_", "sub_"), customer.replace("cus_", "si_")
            event.update(id=f"evt_bench_{customer}_{k}", created=1_700_000_000 + k)
            sub.update(id=sub_id, customer=customer, cancel_at_period_end=scheduled, current_period_end=period_end,
                       metadata={"round": str(k)})
            item = sub["items"]["data"][0]
            item.update(id=item_id, subscription=sub_id)
            for price in (item["price"], item["plan"], sub["plan"]):
                price["id"] = PRICE
            sub["items"]["url"] = f"/v1/subscription_items?subscription={sub_id}"
            event["data"]["previous_attributes"] = previous
            payloads.append(json.dumps(event).encode())
    return payloads


def drive_webhooks(port, payloads, senders, duration):
    """POST signed ``payloads`` in order from ``senders`` threads until all are sent or ``duration`` s pass.

    Returns events/s, p50/p99 (ms), sent, ok and errors. Bounded in count (the payloads) and time.
    """
    counter = itertools.count()
    latencies, failures = [], []
    deadline = time.monotonic() + duration

    def sender():
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while time.monotonic() < deadline:
            index = next(counter)
            if index >= len(payloads):
                break
            body = payloads[index]
            headers = {"Content-Type": "application/json", "Stripe-Signature": sign(body, WEBHOOK_SECRET)}
            started = time.perf_counter()
            try:
                conn.request("POST", "/provider/webhook", body=body, headers=headers)
                response = conn.getresponse()
                answer = response.read()
                elapsed = time.perf_counter() - started
                if response.status != 200 or json.loads(answer) != {"received": True}:
                    failures.append((response.status, answer[:200].decode(errors="replace")))
                latencies.append(elapsed * 1000)
            except (OSError, http.client.HTTPException, ValueError) as exc:
                failures.append((None, repr(exc)))
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=30)
        conn.close()

    threads = [threading.Thread(target=sender, daemon=True) for _ in range(senders)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(duration + 60)
    elapsed = time.perf_counter() - started
    sent = len(latencies) + sum(1 for status, _ in failures if status is None)
    result = {
        "events_per_s": (len(latencies) - sum(1 for s, _ in failures if s is not None)) / elapsed,
        "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
        "sent": sent, "ok": sent - len(failures), "errors": len(failures), "elapsed_s": elapsed,
        "failures_sample": failures[:5],
    }
    log(f"webhooks: {result['events_per_s']:.0f} events/s p50 {result['p50_ms']:.1f} ms "
        f"p99 {result['p99_ms']:.1f} ms errors {result['errors']} (sent {sent} in {elapsed:.1f} s)")
    return result


def measure_logins(port, email, count):
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


def create_emulator_price(emulator_url):
    """Create a monthly price at the emulator for the intent row; return its id."""
    host, port = emulator_url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    body = "unit_amount=900&currency=usd&recurring[interval]=month&product_data[name]=Bench"
    connection.request("POST", "/v1/prices", body=body, headers={
        "Authorization": "Bearer sk_test_bench", "Content-Type": "application/x-www-form-urlencoded"})
    response = connection.getresponse()
    price = json.loads(response.read())
    if response.status != 200:
        raise RuntimeError(f"emulator price failed: {response.status} {price}")
    return price["id"]


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


def run_prune(env):
    """Run ``flask prune-tokens`` in its own process; return seconds, peak RSS (MB) and its output."""
    argv = [sys.executable, "-m", "flask", "--app", "wsgi", "prune-tokens"]
    started = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = process.stdout.read().decode()
    # wait4 gives the rusage of this one child: ru_maxrss is its peak resident set, in KiB on Linux.
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"prune-tokens failed ({process.returncode}):\n{output}")
    pruned = int(re.search(r"pruned (\d+)", output).group(1))
    result = {"seconds": seconds, "peak_rss_mb": usage.ru_maxrss / 1024, "pruned": pruned, "output": output.strip()}
    log(f"prune: {pruned} tokens in {seconds:.1f} s, peak RSS {result['peak_rss_mb']:.0f} MB")
    return result


# --- notification delivery (issue 10): one worker draining the outbox to a local SMTP server ------

DELIVERIES = 2_000


def bench_delivery_worker(db, env, user_id, workdir, count=DELIVERIES):
    """Queue ``count`` email deliveries, drain them with one ``flask deliver-notifications --once`` to a
    local aiosmtpd server (its ``Sink`` handler accepts and drops); return the rate and the counts.

    The rate is over the span of the rows' ``delivered_at`` (the worker's own sending time); the
    whole process, start-up and SMTP check included, is reported beside it.
    """
    from app.models import NotificationDelivery

    now = datetime.now(UTC)
    with db.engine.begin() as conn:
        conn.execute(insert(Notification.__table__), [
            {"user_id": user_id, "kind": "payment_failed", "event_id": f"evt_bench_delivery_{i}", "created_at": now,
             "data": {"subscription": "sub_bench", "invoice": f"in_bench_{i}", "attempt_count": 1,
                      "next_payment_attempt": None, "hosted_invoice_url": "https://pay.example/in"}}
            for i in range(count)])
        ids = conn.execute(select(Notification.id).where(Notification.event_id.like("evt_bench_delivery_%"))).scalars()
        conn.execute(insert(NotificationDelivery.__table__), [
            {"notification_id": i, "channel": "email", "status": "pending", "attempts": 0, "next_attempt_at": now,
             "created_at": now, "updated_at": now} for i in ids])
    smtp_port = free_port()
    smtp = Service("smtp", [sys.executable, "-m", "aiosmtpd", "-n", "-l", f"{HOST}:{smtp_port}",
                            "-c", "aiosmtpd.handlers.Sink"], env, workdir)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((HOST, smtp_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"aiosmtpd did not come up: {smtp.log_path.read_text()[-2000:]}") from None
                time.sleep(0.1)
        started = time.perf_counter()
        worker = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "deliver-notifications", "--once"],
                                cwd=REPO, env={**env, "MAIL_SERVER": HOST, "MAIL_PORT": str(smtp_port)},
                                capture_output=True, text=True)
        wall = time.perf_counter() - started
    finally:
        smtp.stop()
    if worker.returncode != 0:
        raise RuntimeError(f"deliver-notifications failed:\n{worker.stdout}{worker.stderr}")
    delivered = NotificationDelivery.status == "delivered"
    with db.engine.connect() as conn:
        first, last, done = conn.execute(select(func.min(NotificationDelivery.delivered_at),
                                                func.max(NotificationDelivery.delivered_at),
                                                func.count()).where(delivered)).one()
    span = (last - first).total_seconds() if done > 1 else None
    result = {"queued": count, "delivered": done, "seconds": span, "process_seconds": wall,
              "per_s": (done - 1) / span if span else None, "output": worker.stdout.strip().splitlines()[-1:]}
    log(f"delivery worker: {done} of {count} in {wall:.1f} s, {_f(result['per_s'], 0)} notifications/s")
    return result


def delivery_rows(kind, r):
    """The table's delivery-worker row, when this database ran it (PostgreSQL)."""
    delivery = r.get("delivery")
    if delivery is None:
        return []
    return [[kind, "notification delivery worker, email to local aiosmtpd, 1 worker (`--once`)",
             f"{_f(delivery['per_s'], 0)} notifications/s", "", "", str(delivery["queued"] - delivery["delivered"]),
             f"{delivery['delivered']:,} of {delivery['queued']:,} delivered; "
             f"process {_f(delivery['process_seconds'])} s with start-up", "(no target)", "info"]]


# --- one database ---------------------------------------------------------------------------------


def bench_database(kind, args, wrk, emulator_url, workdir):
    log(f"=== {kind} ===")
    db = Database(kind, workdir)
    intent_price = create_emulator_price(emulator_url)
    env = service_env(db, emulator_url, intent_price)
    gunicorn = None
    try:
        subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=REPO, env=env,
                       check=True, capture_output=True)
        port = free_port()
        gunicorn = Service(f"gunicorn-{kind}", [sys.executable, "-m", "gunicorn", "-w", "2", "-k", "sync", "-b",
                                                f"{HOST}:{port}", "--log-level", "warning",
                                                "scripts.bench_wsgi:app"], env, workdir)
        gunicorn.wait_http(port, "/health")
        out = {}

        email = "bench@bench.example"
        status, body = post_json(port, "/auth/register", {"email": email, "password": PASSWORD, "name": "Bench"})
        if status != 201:
            raise RuntimeError(f"register failed: {status} {body}")
        user_id = body["id"]
        token, out["login"] = measure_logins(port, email, args.logins)
        log(f"login: p50 {out['login']['p50_ms']:.0f} ms over {args.logins}")

        for path in ("/_bench/bare", "/auth/me"):  # warm both workers and their pools; not recorded
            run_wrk(wrk, port, path, 2, workdir, token)
        out["bare"] = run_wrk(wrk, port, "/_bench/bare", args.duration, workdir, token)
        out["me"] = run_wrk(wrk, port, "/auth/me", args.duration, workdir, token)
        out["me_scoped"] = run_wrk(wrk, port, "/auth/me", args.duration, workdir, create_scoped_token(port, token))

        seed_other_tokens(db, user_id, args.other_tokens)
        out["me_many_tokens"] = run_wrk(wrk, port, "/auth/me", args.duration, workdir, token)
        out["me_many_tokens"]["other_tokens"] = args.other_tokens

        out["intent"] = measure_intents(port, intent_price, args.intents)

        customers = seed_subscribers(db, WEBHOOK_USERS)
        # The last two rounds (newer events) go one at a time after the loaded run: one delivery's time.
        payloads = webhook_payloads(customers, args.rounds + 2)
        single = payloads[-2 * WEBHOOK_USERS:]
        payloads = payloads[:-2 * WEBHOOK_USERS]
        before = count_rows(db, WebhookEvent)
        out["webhook"] = drive_webhooks(port, payloads, CONNECTIONS, args.duration)
        out["webhook"]["ledger_rows"] = count_rows(db, WebhookEvent) - before
        out["webhook"]["notifications"] = count_rows(db, Notification)
        out["webhook"]["users"] = WEBHOOK_USERS
        if out["webhook"]["ledger_rows"] != out["webhook"]["ok"]:
            # Every delivery answered 200 must be in the ledger exactly once, and no other.
            out["webhook"]["errors"] += abs(out["webhook"]["ledger_rows"] - out["webhook"]["ok"])
        out["webhook_single"] = drive_webhooks(port, single, 1, args.duration)

        gunicorn.stop()
        gunicorn = None
        started = time.perf_counter()
        seed_expired_tokens(db, user_id, args.prune_tokens)
        log(f"seeded {args.prune_tokens} expired tokens in {time.perf_counter() - started:.1f} s")
        out["prune"] = run_prune(env)
        out["prune"]["tokens"] = args.prune_tokens
        out["prune"]["remaining"] = count_rows(db, AccessToken)
        out["prune"]["left_expired"] = count_rows(db, AccessToken, AccessToken.name == "bench-expired")
        if kind == "postgres":
            out["delivery"] = bench_delivery_worker(db, env, user_id, workdir)
        return out
    finally:
        if gunicorn is not None:
            gunicorn.stop()
        db.drop()


# --- the table -------------------------------------------------------------------------------------


def _f(value, digits=1):
    return "—" if value is None else f"{value:,.{digits}f}"


def verdict(ok):
    return "PASS" if ok else "MISS"


def table_rows(kind, r, args):
    rows = []
    bare, me, many = r["bare"], r["me"], r["me_many_tokens"]
    share = me["rps"] / bare["rps"] if bare["rps"] else 0.0
    rows.append([kind, f"`GET /_bench/bare` (ceiling, no database), {CONNECTIONS} conn", f"{_f(bare['rps'], 0)} req/s",
                 _f(bare["p50_ms"]), _f(bare["p99_ms"]), str(bare["errors"]), "", "ceiling", ""])
    me_ok = share >= ME_MIN_SHARE_OF_BARE and me["p99_ms"] < ME_MAX_P99_MS and me["errors"] == 0
    rows.append([kind, f"`GET /auth/me`, valid token, {CONNECTIONS} conn", f"{_f(me['rps'], 0)} req/s",
                 _f(me["p50_ms"]), _f(me["p99_ms"]), str(me["errors"]), f"{share:.0%} of bare",
                 f">= {ME_MIN_SHARE_OF_BARE:.0%} of bare, p99 < {ME_MAX_P99_MS:g} ms, 0 errors", verdict(me_ok)])
    scoped = r["me_scoped"]
    scoped_cost = 1 - scoped["rps"] / me["rps"] if me["rps"] else 1.0
    scoped_ok = scoped_cost < TOKENS_MAX_COST and scoped["errors"] == 0
    rows.append([kind, "`GET /auth/me`, personal token scoped to `profile:read`", f"{_f(scoped['rps'], 0)} req/s",
                 _f(scoped["p50_ms"]), _f(scoped["p99_ms"]), str(scoped["errors"]),
                 f"cost {scoped_cost:+.1%} vs login token", f"cost < {TOKENS_MAX_COST:.0%}, 0 errors",
                 verdict(scoped_ok)])
    cost = 1 - many["rps"] / me["rps"] if me["rps"] else 1.0
    many_ok = cost < TOKENS_MAX_COST and many["errors"] == 0
    rows.append([kind, f"`GET /auth/me`, user owns {many['other_tokens']:,} other tokens",
                 f"{_f(many['rps'], 0)} req/s", _f(many["p50_ms"]), _f(many["p99_ms"]), str(many["errors"]),
                 f"cost {cost:+.1%} vs row above", f"cost < {TOKENS_MAX_COST:.0%}, 0 errors", verdict(many_ok)])
    hook = r["webhook"]
    detail = f"{hook['ok']:,} ok of {hook['sent']:,}; ledger {hook['ledger_rows']:,}; {hook['users']} users"
    if kind == "postgres":
        hook_ok = (hook["events_per_s"] >= WEBHOOK_MIN_EVENTS_PER_S and hook["p99_ms"] is not None
                   and hook["p99_ms"] < WEBHOOK_MAX_P99_MS and hook["errors"] == 0)
        target, result = (f">= {WEBHOOK_MIN_EVENTS_PER_S:g} events/s, p99 < {WEBHOOK_MAX_P99_MS:g} ms, 0 errors",
                          verdict(hook_ok))
    else:
        target, result = "(target is on PostgreSQL)", "info"
    rows.append([kind, f"webhook ingest, signed `customer.subscription.updated`, {CONNECTIONS} senders",
                 f"{_f(hook['events_per_s'], 0)} events/s", _f(hook["p50_ms"]), _f(hook["p99_ms"]),
                 str(hook["errors"]), detail, target, result])
    prune = r["prune"]
    prune_ok = (prune["seconds"] <= PRUNE_MAX_SECONDS and prune["peak_rss_mb"] < PRUNE_MAX_RSS_MB
                and prune["pruned"] == prune["tokens"] and prune["left_expired"] == 0)
    rows.append([kind, f"`flask prune-tokens`, {prune['tokens']:,} expired tokens",
                 f"{_f(prune['seconds'])} s", "", "", "0" if prune["pruned"] == prune["tokens"] else "wrong count",
                 f"peak RSS {_f(prune['peak_rss_mb'], 0)} MB; pruned {prune['pruned']:,}",
                 f"<= {PRUNE_MAX_SECONDS:g} s, peak RSS < {PRUNE_MAX_RSS_MB:g} MB", verdict(prune_ok)])
    single = r["webhook_single"]
    rows.append([kind, "one webhook delivery at a time (1 sender, no load)",
                 f"{_f(single['events_per_s'], 0)} events/s", _f(single["p50_ms"]), _f(single["p99_ms"]),
                 str(single["errors"]), f"{single['ok']:,} ok of {single['sent']:,}", "(no target)", "info"])
    intent = r["intent"]
    rows.append([kind, f"`POST /subscription/intent`, new customer, sequential, {intent['requests']} calls", "",
                 _f(intent["p50_ms"]), _f(intent["p99_ms"]), str(intent["errors"]),
                 "customer + subscription created at the local emulator", "(no target)", "info"])
    login = r["login"]
    rows.append([kind, f"`POST /auth/login`, sequential, {login['requests']} logins", "", _f(login["p50_ms"]),
                 _f(login["p99_ms"]), str(login["errors"]), args.hash_params, "(no target)", "info"])
    return rows


def render_table(rows):
    header = ["DB", "Row", "Throughput", "p50 ms", "p99 ms", "Errors", "Measured", "Target", "Result"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def hash_params():
    from argon2 import PasswordHasher

    defaults = app_config.DEFAULTS
    return (f"Argon2id time_cost={defaults['PASSWORD_HASH_TIME_COST']}, "
            f"memory_cost={defaults['PASSWORD_HASH_MEMORY_COST']} KiB, parallelism={PasswordHasher().parallelism}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per wrk row and webhook bound")
    parser.add_argument("--quick", action="store_true", help="smaller counts and 3 s rows, for a smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.duration = min(args.duration, 3.0)
    args.duration = max(1, round(args.duration))
    args.other_tokens = 1_000 if args.quick else OTHER_TOKENS
    args.prune_tokens = 20_000 if args.quick else PRUNE_TOKENS
    args.logins = 5 if args.quick else LOGINS
    args.intents = 5 if args.quick else INTENTS
    args.rounds = 5 if args.quick else max(10, 6 * args.duration)  # 1,200 events per 10 s: above the target
    args.hash_params = hash_params()

    wrk = ensure_wrk()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    started = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory(prefix="subs-bench-") as workdir:
        emulator_port = free_port()
        emulator = Service("emulator", [sys.executable, "-m", "scripts.stripe_emulator", "--port",
                                        str(emulator_port)], {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, workdir)
        try:
            emulator.wait_http(emulator_port, "/_emulator/clock")
            for kind in kinds:
                results[kind] = bench_database(kind, args, wrk, f"http://{HOST}:{emulator_port}", workdir)
        finally:
            emulator.stop()

    rows = [row for kind in kinds for row in table_rows(kind, results[kind], args) + delivery_rows(kind, results[kind])]
    table = render_table(rows)
    wall = time.perf_counter() - started
    print(table)
    print(f"\n{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}; gunicorn -w 2 -k sync; "
          f"{args.duration} s per wrk row; whole bench {wall:.0f} s.")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "host": platform.node(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "args": vars(args), "wall_seconds": wall, "results": results,
        "table": table, "misses": [row[1] for row in rows if row[-1] == "MISS"],
        "percentile_method": {"wrk": "wrk --latency", "webhook": "nearest rank", "login": "nearest rank"},
    }, indent=2, default=str))
    log(f"raw results: {RESULTS.relative_to(REPO)}")
    return 1 if any(row[-1] == "MISS" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
