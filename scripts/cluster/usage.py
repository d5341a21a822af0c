"""Usage reported by the client app's backend in a cluster run (CONTRACT "Usage-based billing").

Both plans carry a metered price on one ``tokens`` meter (``sum``), so every subscription, a user's or
an organisation's, has the plan's metered item beside its licensed one. A service key made with
``flask create-service-key`` reports batches to ``POST /usage/events`` for the subscribed users and
the organisations, alternating hosts through the load and the kill: a batch refused (the killed
host) or answered 5xx goes to the other host until one answers 202, and then, on purpose, the same
batch goes again to the other host, where every identifier must come back a duplicate. What the
client knows is accepted is ``Reporter.values``: the end checks compare it with the ledger and with
Stripe's meter event summaries per customer (``checks_billables.usage``).
"""
import random
import subprocess
import sys
import threading
from collections import Counter

from scripts.cluster.hosts import REPO

METER_EVENT = "tokens"
METER_POSTS = "POST /v1/billing"
# Events per batch (the contract allows 1 to 100) and the pause between batches, seconds.
BATCH_SIZES = (1, 25)
BATCH_PAUSE = 0.25


def metered_prices(run, product):
    """Create the ``tokens`` meter and a metered price of ``product`` per plan; return ``{plan: price id}``."""
    meter = run.stripe.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": METER_EVENT, "default_aggregation": {"formula": "sum"}})
    run.meter = meter.id
    # The emulator counts requests by their first two path segments: meter events are its POST /v1/billing
    # from here on (the meter's creation was one).
    run.meter_posts_before = run.remote._call("GET", "requests")["by_resource"].get(METER_POSTS, 0)
    return {plan: run.stripe.v1.prices.create(params={
        "product": product, "unit_amount": amount, "currency": "usd",
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}}).id
        for plan, amount in (("basic", 2), ("pro", 1))}


def service_key(env):
    """``flask create-service-key cluster-backend``: the key it prints once (``<id>|<secret>``)."""
    done = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "create-service-key", "cluster-backend"],
                          cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


class Reporter:
    """The backend: ``report`` sends one batch to a host and its deliberate retry to the other.

    ``customers`` are ``(key, reference)`` pairs: ``("user", id)`` with ``{"user": id}``, or
    ``("organization", id)`` with ``{"organization": id}``. ``values`` maps each identifier the
    service accepted (a 202 for its batch) to ``(customer key, value)``.
    """

    def __init__(self, run, key, customers):
        self.run, self.headers, self.customers = run, {"Authorization": f"Bearer {key}"}, customers
        self.values, self.answers, self.retries, self.problems = {}, Counter(), Counter(), []
        self.count, self.lock, self.random = 0, threading.Lock(), random.Random()

    def batch(self):
        with self.lock:
            size = self.random.randint(*BATCH_SIZES)
            chosen = [(self.random.choice(self.customers), self.random.randint(1, 1000)) for _ in range(size)]
            start, self.count = self.count, self.count + size
        return [{"identifier": f"cluster-usage-{start + n}", "event_name": METER_EVENT, "customer": reference,
                 "value": value, "_key": key} for n, ((key, reference), value) in enumerate(chosen)]

    def report(self, host):
        events = self.batch()
        body = {"events": [{k: v for k, v in event.items() if k != "_key"} for event in events]}
        first = self.run.settled("usage events", host, "POST", "/usage/events", json=body, headers=self.headers)
        if first is None or first.status_code != 202:
            self.problems.append(f"batch of {len(events)}: {first and first.status_code} {first and first.text}")
            return
        with self.lock:
            self.answers.update(first.json())
            self.values.update({e["identifier"]: (e["_key"], e["value"]) for e in events})
        again = self.run.settled("usage events again", self.run.other(host), "POST", "/usage/events", json=body,
                                 headers=self.headers)
        all_duplicates = again is not None and again.status_code == 202 and again.json() == {
            "accepted": 0, "duplicates": len(events)}
        with self.lock:
            self.retries["all duplicates" if all_duplicates else "not"] += 1
            if not all_duplicates:
                self.problems.append(f"retry of {len(events)}: {again and again.status_code} {again and again.text}")

