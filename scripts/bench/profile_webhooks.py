"""``python -m scripts.bench.profile_webhooks [--db postgres|sqlite] [--users N] [--top N]``: where a
webhook's CPU goes, on one fixed set of events.

The bench's webhook row runs under load on a shared machine for a fixed time, so how many of its
events (and which: the early ones of a lifecycle call Stripe more) fit in depends on the speed.
This drives the same lifecycles (``webhook_load.lifecycle_events``) at an emulator in this
process, then posts every event once, in order, through the app's whole WSGI stack (Flask's test
client: no HTTP server) and counts the CPU time of the one thread that processes them
(``time.thread_time``: the emulator's threads answering the listeners' Stripe calls are not in
it). Prints the CPU per event and cProfile's functions by cumulative time (issue 35: the split
before and after the Core writer, docs/testing.md).
"""
import argparse
import cProfile
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time

from scripts.bench.database import Database, service_env
from scripts.bench.settings import REPO, WEBHOOK_SECRET
from scripts.bench.webhook_load import RemoteEmulator, in_creation_order, lifecycle_events, seed_customers
from scripts.stripe_emulator.testing import RunningEmulator
from tests.signing import sign

# The first events compile each statement once per process; they are processed, not counted.
WARM_UP = 100


def _app(env):
    os.environ.update(env)
    from app import create_app

    return create_app()


def profile(kind, users, top):
    """Return the report (text) of one profile run on a throwaway database of ``kind``."""
    with tempfile.TemporaryDirectory(prefix="subs-profile-") as workdir, RunningEmulator() as running:
        emulator = RemoteEmulator(running.url)
        db = Database(kind, workdir)
        try:
            prices = emulator.prices()
            env = service_env(db, running.url, {prices["basic"]: "basic", prices["pro"]: "pro"})
            subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", "upgrade"], cwd=REPO, env=env,
                           check=True, capture_output=True)
            customers = seed_customers(emulator, db.engine, "profile-", users)
            payloads = in_creation_order(lifecycle_events(emulator, prices, customers))
            client = _app(env).test_client()

            def post(body):
                answer = client.post("/provider/webhook", data=body, headers={
                    "Content-Type": "application/json", "Stripe-Signature": sign(body, WEBHOOK_SECRET)})
                if answer.status_code != 200:
                    raise RuntimeError(f"webhook answered {answer.status_code}: {answer.get_data(as_text=True)}")

            for body in payloads[:WARM_UP]:
                post(body)
            # Every other event is timed, the others profiled: cProfile's own cost stays out of the
            # time, and both halves are the same mix.
            timed, profiled = payloads[WARM_UP::2], payloads[WARM_UP + 1::2]
            profiler, cpu, wall = cProfile.Profile(time.thread_time), 0.0, 0.0
            for plain, traced in zip(timed, profiled + [None], strict=False):
                started, wall_started = time.thread_time(), time.perf_counter()
                post(plain)
                cpu, wall = cpu + time.thread_time() - started, wall + time.perf_counter() - wall_started
                if traced is not None:
                    profiler.runcall(post, traced)
        finally:
            db.drop()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    head = (f"{kind}: {len(timed)} events timed ({len(profiled)} others profiled) after {WARM_UP} to warm up; "
            f"service thread CPU {cpu * 1000 / len(timed):.2f} ms/event, wall {wall * 1000 / len(timed):.2f} ms/event "
            "(the emulator's answers to the listeners' Stripe calls included)")
    return head + "\n" + out.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m scripts.bench.profile_webhooks",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--users", type=int, default=100, help="subscription lifecycles (about 11 events each)")
    parser.add_argument("--top", type=int, default=40, help="functions listed")
    args = parser.parse_args(argv)
    print(profile(args.db, args.users, args.top))


if __name__ == "__main__":
    main()
