"""``make bench``: every measurement on each database, then the table and the raw results."""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import scripts.bench
from app import config as app_config
from app.models import AccessToken
from scripts.bench import accounts
from scripts.bench.authenticated import measure_authenticated
from scripts.bench.database import Database, count_rows, seed_expired_tokens, service_env
from scripts.bench.delivery import bench_delivery_worker, delivery_rows
from scripts.bench.entitlements import entitlement_rows, measure_entitlements
from scripts.bench.processes import Service, ensure_wrk, gunicorn_argv, post_json
from scripts.bench.provider_calls import provider_call_table
from scripts.bench.prune import run_prune
from scripts.bench.sequential import measure_intents, measure_logins, measure_swaps
from scripts.bench.settings import (
    HOST,
    INTENTS,
    LOGINS,
    OTHER_TOKENS,
    PASSWORD,
    PRUNE_TOKENS,
    REPEATS,
    REPO,
    RESULTS,
    SINGLE_WEBHOOK_USERS,
    SWAPS,
    WARM_UP_SECONDS,
    WEBHOOK_SECRET,
    WEBHOOK_USERS,
    log,
)
from scripts.bench.table import render_table, table_rows
from scripts.bench.usage import measure_delivery, measure_ingest, usage_rows
from scripts.bench.webhook_load import RemoteEmulator
from scripts.bench.webhooks import measure_webhooks
from tests.ports import free_port


def bench_database(kind, args, wrk, emulator, minimal_port, workdir, emulator_pid):
    """Measure every row on a throwaway database of ``kind`` behind gunicorn; return the raw results."""
    log(f"=== {kind} ===")
    db = Database(kind, workdir)
    prices = emulator.prices()
    env = service_env(db, emulator.url, {prices["basic"]: "basic", prices["pro"]: "pro"})
    gunicorn = None
    try:
        subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=REPO, env=env,
                       check=True, capture_output=True)
        port = free_port()
        gunicorn = Service(f"gunicorn-{kind}", gunicorn_argv(port, "scripts.bench.service_app:app"), env, workdir)
        gunicorn.wait_http(port, "/health")
        out = {}

        email = "bench@bench.example"
        status, body = post_json(port, "/auth/register", {"email": email, "password": PASSWORD, "name": "Bench"})
        if status != 201:
            raise RuntimeError(f"register failed: {status} {body}")
        user_id = body["id"]
        token, out["login"] = measure_logins(port, email, args.logins)
        log(f"login: p50 {out['login']['p50_ms']:.0f} ms over {args.logins}")

        out.update(measure_authenticated(wrk, db, port, minimal_port, token, args, workdir, gunicorn.process.pid,
                                         emulator))
        if not args.focus:
            out["intent"] = measure_intents(port, prices["pro"], args.intents)
            out["swap"] = measure_swaps(port, emulator, db, prices, args.swaps)
            out["forgot"] = accounts.measure_forgot(env, workdir, 50 if args.quick else accounts.REQUESTS)
            out.update(measure_entitlements(wrk, db, env, port, minimal_port, args, workdir, gunicorn.process.pid))

        out.update(measure_webhooks(port, emulator, db, prices, args,
                                    {"gunicorn": gunicorn.process.pid, "emulator": emulator_pid}))
        out.update(measure_ingest(port, emulator, db, env, args))
        if args.focus:
            return out
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
            out.update(measure_delivery(db, env, args.quick))
        return out
    finally:
        if gunicorn is not None:
            gunicorn.stop()
        db.drop()


def hash_params():
    """The password hash's parameters, as the login row shows them."""
    from argon2 import PasswordHasher

    defaults = app_config.DEFAULTS
    return (f"Argon2id time_cost={defaults['PASSWORD_HASH_TIME_COST']}, "
            f"memory_cost={defaults['PASSWORD_HASH_MEMORY_COST']} KiB, parallelism={PasswordHasher().parallelism}")


def options(argv=None):
    """Return the command line's options with the counts each size of run (full, ``--quick``, ``--smoke``) uses."""
    parser = argparse.ArgumentParser(prog="python -m scripts.bench", description=scripts.bench.__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per wrk row and webhook bound")
    parser.add_argument("--quick", action="store_true", help="smaller counts and 3 s rows, for a smoke run")
    parser.add_argument("--smoke", action="store_true",
                        help="--quick with 1 s rows, no warm-up and one row of each kind (make test's smoke run)")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the raw results go (JSON)")
    parser.add_argument("--focus", action="store_true",
                        help="only the ceiling, GET /auth/me and the webhook mix, full size (for work on those)")
    args = parser.parse_args(argv)
    if args.focus:
        args.smoke = False
    if args.smoke:
        args.quick, args.duration = True, 1
    if args.quick:
        args.duration = min(args.duration, 3.0)
    args.duration = max(1, round(args.duration))
    args.other_tokens = 1_000 if args.quick else OTHER_TOKENS
    args.prune_tokens = 20_000 if args.quick else PRUNE_TOKENS
    args.logins = 5 if args.quick else LOGINS
    args.intents = 5 if args.quick else INTENTS
    args.swaps = 6 if args.quick else SWAPS
    args.repeats = 1 if args.quick else REPEATS
    args.webhook_users = 20 if args.quick else WEBHOOK_USERS
    args.single_webhook_users = 0 if args.smoke or args.focus else SINGLE_WEBHOOK_USERS
    args.warm_up = 0 if args.smoke else WARM_UP_SECONDS
    args.hash_params = hash_params()
    return args


def main(argv=None):
    """Run the bench, print the table, write the raw results; return 1 while a target is missed."""
    args = options(argv)
    wrk = ensure_wrk()
    kinds = ["sqlite", "postgres"] if args.db == "both" else [args.db]
    started = time.perf_counter()
    results = {}
    with tempfile.TemporaryDirectory(prefix="subs-bench-") as workdir:
        quiet = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        emulator_port, minimal_port = free_port(), free_port()
        emulator = Service("emulator", [sys.executable, "-m", "scripts.stripe_emulator", "--port",
                                        str(emulator_port)], quiet, workdir)
        # The settings file's start-up check asks the minimal app for the webhook secret and key too.
        minimal = Service("gunicorn-minimal", gunicorn_argv(minimal_port, "scripts.bench.minimal_app:app"),
                          {**quiet, "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET, "SECRET_KEY": "bench secret key",
                           "RATELIMIT_ALLOW_MEMORY": "true"},
                          workdir)
        try:
            emulator.wait_http(emulator_port, "/_emulator/clock")
            minimal.wait_http(minimal_port, "/")
            for kind in kinds:
                results[kind] = bench_database(kind, args, wrk, RemoteEmulator(f"http://{HOST}:{emulator_port}"),
                                               minimal_port, workdir, emulator.process.pid)
        finally:
            minimal.stop()
            emulator.stop()

    rows = [row for kind in kinds for row in table_rows(kind, results[kind], args) + delivery_rows(kind, results[kind])
            + usage_rows(kind, results[kind]) + entitlement_rows(kind, results[kind], args)]
    table = render_table(rows)
    wall = time.perf_counter() - started
    print(table)
    print(f"\n{platform.node()}: {os.cpu_count()} CPUs, Python {platform.python_version()}; gunicorn -w 2 -k sync; "
          f"each wrk row {args.repeats} x {args.duration} s after a {args.warm_up} s warm-up, median (min-max); "
          f"whole bench {wall:.0f} s; load average at the end {os.getloadavg()[0]:.2f}.")
    calls_table, calls_met = "", True
    if not args.focus:
        calls_table, results["provider_calls"], calls_met = provider_call_table(min(3, args.duration), args.repeats)
        print(f"\n{calls_table}")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({
        "when": datetime.now(UTC).isoformat(timespec="seconds"), "host": platform.node(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "args": vars(args), "wall_seconds": wall, "results": results,
        "table": table, "provider_calls_table": calls_table,
        "misses": [row[1] for row in rows if row[-1] == "MISS"] + ([] if calls_met else ["provider calls"]),
        "percentile_method": {"wrk": "wrk --latency", "webhook": "nearest rank", "login": "nearest rank"},
    }, indent=2, default=str))
    log(f"raw results: {args.results}")
    return 1 if any(row[-1] == "MISS" for row in rows) or not calls_met else 0
