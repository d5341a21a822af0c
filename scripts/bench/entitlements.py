"""Entitlements (issue 44): consumes of ``POST /entitlements/check`` with a service key under wrk, against the
minimal app and the ceiling of any consume (``POST /_bench/write``: its take alone) in the same rounds, and a
race of ``RACE_CONSUMES`` concurrent consumes of 1 unit for a quota with ``RACE_REMAINING`` left, which must
allow exactly that many and leave the ledger at its limit."""
import json
import secrets
import subprocess
import sys
import threading
import time

from sqlalchemy import func, select

from app.models import EntitlementBalance, EntitlementConsume
from scripts.bench.cpu import children_of, cpu_per_event, postgres_pids
from scripts.bench.processes import register_and_login, request
from scripts.bench.runner import run_rows
from scripts.bench.settings import (
    CONNECTIONS,
    CONSUME_MAX_P99_MS,
    CONSUME_MIN_SHARE_OF_MINIMAL,
    REPO,
    log,
)
from scripts.bench.table import fmt, spread, verdict, wrk_cells
from scripts.bench.webhook_load import percentile

FEATURE, SCARCE, WRITTEN = "bench.calls", "bench.scarce", "bench.written"
RACE_CONSUMES, RACE_REMAINING = 1_000, 500
# The bench's users are on the free plan (no subscription). The loaded quota is finite, so each consume runs
# the conditional UPDATE a real limit needs (an unlimited one could skip it), and large enough never to refuse.
PLAN_FEATURES = {"free": {FEATURE: {"limit": 10**15}, SCARCE: {"limit": RACE_REMAINING}}}
# wrk's script: each thread (``setup``) gets a prefix of its own, each request a new identifier within it.
_LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("prefix", "%(run)s-" .. threads)
end
local n = 0
function request()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"customer": {"user": %(user)d}, "feature": "%(feature)s", "consume": true, '
    .. '"identifier": "' .. prefix .. '-' .. n .. '"}')
end"""


def _service_key(env):
    """A service key with ``entitlements:check`` made by ``flask create-service-key``; return its plain text."""
    made = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "create-service-key", "bench-entitlements",
                           "--ability", "entitlements:check"], cwd=REPO, env=env, capture_output=True, text=True,
                          check=True)
    return made.stdout.strip().splitlines()[-1]


def _ledger(db, user_id, feature):
    """``(used, refused)``: the balance's used units and how many consumes took nothing, over all periods."""
    billable = f"user:{user_id}"
    with db.engine.connect() as conn:
        used = conn.scalar(select(func.coalesce(func.sum(EntitlementBalance.used), 0)).where(
            EntitlementBalance.billable == billable, EntitlementBalance.feature == feature))
        refused = conn.scalar(select(func.count()).select_from(EntitlementConsume).where(
            EntitlementConsume.billable == billable, EntitlementConsume.feature == feature,
            EntitlementConsume.consumed == 0))
    return int(used), refused  # PostgreSQL's SUM of a bigint is a numeric


def _race(port, key, user_id):
    """``RACE_CONSUMES`` threads, released at once by a barrier, each one consume of 1 unit on a connection of its
    own; return the answers' counts and the latencies."""
    run, barrier = secrets.token_hex(4), threading.Barrier(RACE_CONSUMES)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    answers, latencies = [], []

    def consume(index):
        body = json.dumps({"customer": {"user": user_id}, "feature": SCARCE, "consume": True,
                           "identifier": f"race-{run}-{index}"})
        barrier.wait()
        started = time.perf_counter()
        try:
            status, raw = request(port, "POST", "/entitlements/check", body, headers, timeout=120)
            answers.append(json.loads(raw)["allowed"] if status == 200 else status)
            latencies.append((time.perf_counter() - started) * 1000)
        except (OSError, ValueError, KeyError) as exc:
            answers.append(repr(exc))

    threads = [threading.Thread(target=consume, args=(index,), daemon=True) for index in range(RACE_CONSUMES)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(180)
    allowed, denied = answers.count(True), answers.count(False)
    return {"consumes": RACE_CONSUMES, "remaining": RACE_REMAINING, "allowed": allowed, "denied": denied,
            "errors": RACE_CONSUMES - allowed - denied, "seconds": time.perf_counter() - started,
            "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
            "errors_sample": [answer for answer in answers if not isinstance(answer, bool)][:3]}


def measure_entitlements(wrk, db, env, port, minimal_port, args, workdir, gunicorn_pid):
    """The consume row (wrk, interleaved with the minimal app and the write ceiling, each with its CPU per request)
    and the race; return their raw results."""
    key = _service_key(env)
    user_id, _ = register_and_login(port, "bench-consume@bench.example")

    def lua(feature=FEATURE):
        return _LUA % {"run": secrets.token_hex(4), "user": user_id, "feature": feature}

    server = {"workers": lambda: children_of(gunicorn_pid)}
    if db.kind == "postgres":
        server["postgres"] = postgres_pids
    rows = {"consume_minimal": (minimal_port, "/", None), "consume": (port, "/entitlements/check", key, lua),
            "consume_write": (port, "/_bench/write", None, lambda: lua(WRITTEN))}
    out = run_rows(wrk, rows, args, workdir, meters={"consume": server, "consume_write": server})
    out["consume"]["used"], out["consume"]["refused"] = _ledger(db, user_id, FEATURE)
    race_user, _ = register_and_login(port, "bench-race@bench.example")
    out["consume_race"] = _race(port, key, race_user)
    out["consume_race"]["used"], _ = _ledger(db, race_user, SCARCE)
    race = out["consume_race"]
    log(f"entitlements: consume {out['consume']['rps']:.0f} req/s p99 {out['consume']['p99_ms']:.1f} ms; race "
        f"{race['allowed']} allowed of {race['consumes']}, ledger used {race['used']}")
    return out


def entitlement_rows(kind, r, args):
    """The consume rows of database ``kind``: throughput and p99 (targets on PostgreSQL), and the race (on both)."""
    if "consume" not in r:
        return []
    consume, minimal, race, write = r["consume"], r["consume_minimal"], r["consume_race"], r["consume_write"]
    postgres = kind == "postgres"
    share = consume["rps"] / minimal["rps"] if minimal["rps"] else 0.0
    write_share = write["rps"] / minimal["rps"] if minimal["rps"] else 0.0
    # A refused consume is a 200 wrk cannot tell apart: the ledger counts them.
    errors = consume["errors"] + consume["refused"]
    runs = f"{CONNECTIONS} conn, {args.repeats} x {args.duration} s"
    cells = [spread(consume, "rps", 0, " req/s"), fmt(consume["p50_ms"]), spread(consume, "p99_ms", 1), str(errors)]
    ledger = f"ledger: {consume['used']:,} units taken, {consume['refused']} refused"
    share_ok = share >= CONSUME_MIN_SHARE_OF_MINIMAL and errors == 0
    p99_ok = consume["p99_ms"] < CONSUME_MAX_P99_MS and errors == 0
    race_ok = (race["allowed"] == race["remaining"] == race["used"] and race["errors"] == 0
               and race["denied"] == race["consumes"] - race["remaining"])
    return [
        [kind, f"`POST /entitlements/check` consume, service key, unique identifiers, {runs}", *cells,
         f"{share:.0%} of minimal (its own rounds: {fmt(minimal['rps'], 0)} req/s), "
         f"{consume['rps'] / write['rps'] if write['rps'] else 0:.0%} of the write ceiling; {ledger}; "
         + cpu_per_event(consume.get("cpu_ms_per_request")),
         f">= {CONSUME_MIN_SHARE_OF_MINIMAL:.0%} of minimal, 0 errors" if postgres else "(target is on PostgreSQL)",
         verdict(share_ok) if postgres else "info"],
        [kind, f"`POST /entitlements/check` consume latency at {CONNECTIONS} connections (the runs above)", "",
         fmt(consume["p50_ms"]), spread(consume, "p99_ms", 1), str(errors), "wrk --latency",
         f"p99 < {CONSUME_MAX_P99_MS:g} ms" if postgres else "(target is on PostgreSQL)",
         verdict(p99_ok) if postgres else "info"],
        [kind, f"Ceiling of any consume: its take alone (`POST /_bench/write`, one upsert in autocommit, no key, "
         f"no validation, no claim), {runs}", *wrk_cells(write),
         f"{write_share:.0%} of minimal; " + cpu_per_event(write.get("cpu_ms_per_request")),
         "(what a durable take costs on this stack)", "info"],
        [kind, f"{race['consumes']:,} concurrent consumes of 1 unit, quota with {race['remaining']} remaining",
         f"{fmt(race['seconds'])} s", fmt(race["p50_ms"]), fmt(race["p99_ms"]), str(race["errors"]),
         f"{race['allowed']} allowed, {race['denied']} refused; ledger used {race['used']} of {race['remaining']}",
         f"exactly {race['remaining']} allowed, used = limit", verdict(race_ok)],
    ]
