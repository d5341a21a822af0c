"""Usage reports (issue 34): ``POST /usage/events`` ingest under load and one batch at a time, and the
delivery worker's throughput to the emulator's meter events."""
import json
import subprocess
import sys
import time

from sqlalchemy import func, insert, select

from app.models import UsageEvent, User
from scripts.bench.settings import CONNECTIONS, REPO, log
from scripts.bench.table import fmt, verdict
from scripts.bench.webhook_load import percentile, post_concurrently

BATCH = 100
SINGLE_BATCHES = 200
# The ingest targets: a batch is one INSERT, so events/s must be far above the webhook mix's (one event
# per request, each written with its listeners), and one batch must answer fast.
INGEST_MIN_WEBHOOK_MULTIPLE = 20
SINGLE_BATCH_MAX_P99_MS = 50.0
DELIVERIES = 3_000
PACED_RATE, PACED_EVENTS = 200, 1_000


def _set_up(emulator, db, env):
    """The ``bench_tokens`` meter, a customer and its user, a service key; return ``(user id, header)``."""
    # The webhook rows' lifecycles moved Stripe's clock months on, and Stripe checks a meter event's
    # timestamp (35 days back at most) against its own clock: back to the time the service reports in.
    emulator.rewind()
    # One emulator serves both databases' rows: the meter is made once (Stripe refuses a second active
    # meter of one event name).
    active = emulator.stripe.v1.billing.meters.list(params={"status": "active", "limit": 100}).data
    if not any(meter.event_name == "bench_tokens" for meter in active):
        emulator.stripe.v1.billing.meters.create(params={"display_name": "Bench tokens", "event_name": "bench_tokens",
                                                         "default_aggregation": {"formula": "sum"}})
    customer = emulator.stripe.v1.customers.create(params={"email": "usage@bench.example"}).id
    with db.engine.begin() as conn:
        user_id = conn.execute(insert(User.__table__).values(
            email="usage@bench.example", password_hash="x", provider_id=customer)
            .returning(User.__table__.c.id)).scalar_one()
    made = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "create-service-key", "bench"], cwd=REPO,
                          env=env, capture_output=True, text=True, check=True)
    return user_id, {"Authorization": f"Bearer {made.stdout.strip().splitlines()[-1]}",
                     "Content-Type": "application/json"}


def _drive(port, headers, user_id, senders, duration, prefix, limit=None):
    """POST batches of ``BATCH`` new events from ``senders`` threads for ``duration`` s (or ``limit`` batches)."""
    def request_of(index):
        return json.dumps({"events": [{"identifier": f"{prefix}-{index}-{n}", "event_name": "bench_tokens",
                                       "customer": {"user": user_id}, "value": n + 1} for n in range(BATCH)]}), headers

    latencies, failures, elapsed = post_concurrently(port, "/usage/events", request_of,
                                                     (202, {"accepted": BATCH, "duplicates": 0}), senders, duration,
                                                     limit if limit is not None else sys.maxsize)
    ok = len(latencies) - sum(1 for status, _ in failures if status is not None)
    return {"events_per_s": ok * BATCH / elapsed, "batches": len(latencies), "errors": len(failures),
            "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
            "failures_sample": failures[:3]}


def measure_ingest(port, emulator, db, env, args):
    """The ingest rows: batches of 100 from ``CONNECTIONS`` senders, then one batch at a time."""
    user_id, headers = _set_up(emulator, db, env)
    out = {"usage_ingest": _drive(port, headers, user_id, CONNECTIONS, args.duration, "load")}
    out["usage_single"] = _drive(port, headers, user_id, 1, args.duration * 3, "single",
                                 limit=20 if args.quick else SINGLE_BATCHES)
    with db.engine.connect() as conn:
        stored = conn.execute(select(func.count()).select_from(UsageEvent)).scalar_one()
    out["usage_ingest"]["stored"] = stored
    log(f"usage ingest: {out['usage_ingest']['events_per_s']:.0f} events/s; one batch p99 "
        f"{fmt(out['usage_single']['p99_ms'])} ms; {stored} stored")
    return out


def _deliver(db, env, rate, count):
    """Leave ``count`` events pending, run ``flask deliver-usage --once`` at ``rate``; return events/s and more."""
    with db.engine.begin() as conn:
        ids = conn.execute(select(UsageEvent.id).order_by(UsageEvent.id).limit(count)).scalars().all()
        conn.execute(UsageEvent.__table__.delete().where(UsageEvent.id.not_in(ids)))
        conn.execute(UsageEvent.__table__.update().values(status="pending", delivered_at=None, attempts=0,
                                                           next_attempt_at=func.now(),
                                                           identifier=UsageEvent.identifier + f"-r{rate}"))
    started = time.perf_counter()
    worker = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "deliver-usage", "--once"], cwd=REPO,
                            env={**env, "USAGE_DELIVERY_RATE": str(rate)}, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if worker.returncode != 0:
        raise RuntimeError(f"deliver-usage failed:\n{worker.stdout}{worker.stderr}")
    with db.engine.connect() as conn:
        first, last, done = conn.execute(select(func.min(UsageEvent.delivered_at), func.max(UsageEvent.delivered_at),
                                                func.count()).where(UsageEvent.status == "delivered")).one()
        errors = conn.execute(select(UsageEvent.last_error, func.count()).where(UsageEvent.status != "delivered")
                              .group_by(UsageEvent.last_error).limit(3)).all()
    for message, how_many in errors:  # what a row that is not PASS needs to be read
        log(f"usage delivery: {how_many} not delivered: {message}")
    span = (last - first).total_seconds() if done > 1 else None
    return {"queued": len(ids), "delivered": done, "rate": rate, "process_seconds": wall,
            "per_s": (done - 1) / span if span else None}


def measure_delivery(db, env, quick):
    """The delivery rows: as fast as the emulator answers, then paced at ``PACED_RATE``."""
    out = {"usage_delivery": _deliver(db, env, 100_000, 300 if quick else DELIVERIES)}
    out["usage_paced"] = _deliver(db, env, PACED_RATE, 200 if quick else PACED_EVENTS)
    log(f"usage delivery: {fmt(out['usage_delivery']['per_s'], 0)} events/s unpaced, "
        f"{fmt(out['usage_paced']['per_s'], 0)} events/s at USAGE_DELIVERY_RATE={PACED_RATE}")
    return out


def usage_rows(kind, r):
    """The usage rows of database ``kind`` (ingest on both; the targets and delivery on PostgreSQL)."""
    if "usage_ingest" not in r:
        return []
    ingest, single, hook = r["usage_ingest"], r["usage_single"], r["webhook"]
    multiple = ingest["events_per_s"] / hook["events_per_s"] if hook["events_per_s"] else None
    postgres = kind == "postgres"
    ingest_ok = multiple is not None and multiple >= INGEST_MIN_WEBHOOK_MULTIPLE and ingest["errors"] == 0
    single_ok = single["p99_ms"] is not None and single["p99_ms"] < SINGLE_BATCH_MAX_P99_MS and single["errors"] == 0
    rows = [[kind, f"`POST /usage/events`, batches of {BATCH}, {CONNECTIONS} senders",
             f"{fmt(ingest['events_per_s'], 0)} events/s", fmt(ingest["p50_ms"]), fmt(ingest["p99_ms"]),
             str(ingest["errors"]), f"{fmt(multiple, 1)}x the webhook mix's events/s; {ingest['stored']:,} stored",
             f">= {INGEST_MIN_WEBHOOK_MULTIPLE}x the webhook mix" if postgres else "(target is on PostgreSQL)",
             verdict(ingest_ok) if postgres else "info"],
            [kind, f"`POST /usage/events`, one batch of {BATCH} at a time (1 sender)",
             f"{fmt(single['events_per_s'], 0)} events/s", fmt(single["p50_ms"]), fmt(single["p99_ms"]),
             str(single["errors"]), f"{single['batches']} batches",
             f"p99 < {SINGLE_BATCH_MAX_P99_MS:g} ms" if postgres else "(target is on PostgreSQL)",
             verdict(single_ok) if postgres else "info"]]
    for name, label in (("usage_delivery", "unpaced (the emulator's pace)"),
                        ("usage_paced", f"USAGE_DELIVERY_RATE={PACED_RATE}")):
        if name in r:
            d = r[name]
            rows.append([kind, f"usage delivery worker to the emulator's meter events, {label} (`--once`)",
                         f"{fmt(d['per_s'], 0)} events/s", "", "", str(d["queued"] - d["delivered"]),
                         f"{d['delivered']:,} of {d['queued']:,} delivered; process {fmt(d['process_seconds'])} s",
                         "(no target)" if name == "usage_delivery" else f"<= {PACED_RATE}/s",
                         "info" if name == "usage_delivery" else verdict(d["per_s"] is not None
                                                                         and d["per_s"] <= PACED_RATE * 1.05)])
    return rows
