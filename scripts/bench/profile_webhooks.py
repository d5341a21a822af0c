"""``python -m scripts.bench.profile_webhooks [--db postgres|sqlite] [--users N] [--top N]``: where a
webhook's CPU goes, on one fixed set of events.

The bench's webhook row runs under load on a shared machine for a fixed time, so how many of its
events (and which: the early ones of a lifecycle call Stripe more) fit in depends on the speed.
This drives the same lifecycles (``webhook_load.lifecycle_events``) at an emulator in this
process, then posts every event once, in order, through the app's whole WSGI stack (Flask's test
client: no HTTP server) and counts the CPU time of the one thread that processes them
(``time.thread_time``: the emulator's threads answering the listeners' Stripe calls are not in
it). Prints the CPU per event, its split by stage of the delivery on the same clock (``Stages``), and
cProfile's functions by cumulative time (issue 35: the split before and after the Core writer,
docs/testing.md).
"""
import argparse
import cProfile
import functools
import io
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections import Counter

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


# A delivery's stages in the order it goes through them; those of ``process_event`` are indented.
VERIFY, PROCESS, COMMIT = "verify and check (read_delivery)", "process_event", "commit"
LEDGER, LOCK = "  ledger (record)", "  lock and load the billable (lock_customer)"
WRITE, LISTENERS = "  subscription row (write_subscription, write_checkout)", "  listeners (webhook_handled)"
PROCESS_REST = "  the rest of process_event"
AROUND = "Flask, werkzeug, flask-smorest and the test client around the view"


class Stages:
    """The service thread's CPU (``time.thread_time``) in each stage of a delivery, over the timed events.

    cProfile's own cost falls on Python-heavy code (marshmallow, the ORM's loading) far more than on
    C (psycopg's, json's), so its shares overstate the one and understate the other. These are the
    thread's CPU clock read around the functions the webhook view calls in turn, counted only while
    ``on``. ``install`` wraps them in this process for good: the profile is the process's only work.
    """

    def __init__(self):
        self.cpu, self.on = Counter(), False

    def timed(self, name, function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if not self.on:
                return function(*args, **kwargs)
            started = time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.cpu[name] += time.thread_time() - started
        return wrapper

    def install(self):
        from flask_sqlalchemy.session import Session

        from app.billing import state
        from app.webhook import service

        service.read_delivery = self.timed(VERIFY, service.read_delivery)
        service.process_event = self.timed(PROCESS, service.process_event)
        service.record = self.timed(LEDGER, service.record)
        state.lock_customer = self.timed(LOCK, state.lock_customer)
        for event_type, writer in service.WRITERS.items():
            service.WRITERS[event_type] = self.timed(WRITE, writer)
        service.webhook_handled.send = self.timed(LISTENERS, service.webhook_handled.send)
        Session.commit = self.timed(COMMIT, Session.commit)

    def report(self, events, total):
        """Lines: each stage's ms per event and share of ``total`` (the CPU of ``events`` requests, s)."""
        cpu = dict(self.cpu)
        cpu[PROCESS_REST] = cpu[PROCESS] - sum(cpu.get(name, 0.0) for name in (LEDGER, LOCK, WRITE, LISTENERS))
        cpu[AROUND] = total - sum(cpu.get(name, 0.0) for name in (VERIFY, PROCESS, COMMIT))
        return [f"{name:<70} {cpu.get(name, 0.0) * 1000 / events:6.2f} ms/event {cpu.get(name, 0.0) / total:6.1%}"
                for name in (VERIFY, PROCESS, LEDGER, LOCK, WRITE, LISTENERS, PROCESS_REST, COMMIT, AROUND)]


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
            stages = Stages()
            stages.install()

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
                stages.on = True
                started, wall_started = time.thread_time(), time.perf_counter()
                post(plain)
                cpu, wall = cpu + time.thread_time() - started, wall + time.perf_counter() - wall_started
                stages.on = False
                if traced is not None:
                    profiler.runcall(post, traced)
        finally:
            db.drop()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    head = (f"{kind}: {len(timed)} events timed ({len(profiled)} others profiled) after {WARM_UP} to warm up; "
            f"service thread CPU {cpu * 1000 / len(timed):.2f} ms/event, wall {wall * 1000 / len(timed):.2f} ms/event "
            "(the emulator's answers to the listeners' Stripe calls included)")
    split = "\n".join(["The timed events' CPU by stage (the service thread's clock):", *stages.report(len(timed), cpu)])
    return "\n".join([head, split, out.getvalue()])


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
