"""The webhook rows of ``make bench``: a realistic mix of provider events, sent signed under load.

The events are not made up: ``lifecycle_events`` drives one subscription per customer through
its life at the emulator with the real ``stripe`` SDK (``tests/support/reliability.py``'s
``drive_lifecycles``: subscribe, pay, swap, cancel at period end, resume, renew, cancel) and
takes the events the emulator recorded, of the types the service subscribes to. Delivered to
the service, ``invoice.paid`` and activating updates make the card listener call the emulator
(retrieve the payment intent and the customer, set the default method, retrieve the method),
so ``provider_calls_per_event`` is counted from the emulator's ``GET /_emulator/requests``.
"""
import http.client
import itertools
import json
import threading
import time
from datetime import UTC, datetime

import stripe
from sqlalchemy import insert, select

from app.billing.events import REQUIRED_EVENT_TYPES
from app.models import Subscription, User
from tests.signing import sign
from tests.support.reliability import customer_of, drive_lifecycles, provider_events

HOST = "127.0.0.1"
API_KEY = "sk_test_bench"


def percentile(values, fraction):
    """Return the ``fraction`` (0..1) percentile of ``values`` by nearest rank, or ``None`` if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered) + 0.5) - 1))]


class RemoteEmulator:
    """The emulator process of the bench, through its ``/_emulator`` control endpoints."""

    def __init__(self, url):
        self.url = url
        self.stripe = stripe.StripeClient(API_KEY, base_addresses={"api": url}, max_network_retries=0)

    def _call(self, method, path, body=None):
        host, port = self.url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        try:
            connection.request(method, f"/_emulator/{path}", body=json.dumps(body or {}).encode(),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = json.loads(response.read())
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"emulator {method} {path}: {response.status} {answer}")
        return answer

    def advance(self, seconds):
        """Move the emulator's clock on by ``seconds``; renewals and period ends fall due."""
        return self._call("POST", "clock/advance", {"seconds": seconds})

    def rewind(self):
        """Put the emulator's clock back to real time (what ``advance`` added is taken off)."""
        return self._call("POST", "clock/rewind", {})

    def api_requests(self):
        """Return how many ``/v1`` requests the emulator has served since its last reset."""
        return self._call("GET", "requests")["total"]

    def subscription_statuses(self):
        """Return ``{subscription id: status}`` as the provider holds them now."""
        return {sub["id"]: sub["status"] for sub in self._call("GET", "state")["subscriptions"]}

    def prices(self):
        """Create a product with a ``basic`` and a ``pro`` monthly price; return ``{plan: price id}``."""
        product = self.stripe.v1.products.create(params={"name": "Bench"})
        return {plan: self.stripe.v1.prices.create(params={
            "product": product.id, "unit_amount": amount, "currency": "usd", "recurring": {"interval": "month"}}).id
            for plan, amount in (("basic", 900), ("pro", 2900))}


def seed_customers(emulator, engine, label, count):
    """Create ``count`` customers at the emulator and a user for each in the service's database.

    Returns the customer ids. ``label`` keeps the emails of two calls apart.
    """
    now = datetime.now(UTC)
    customers = [emulator.stripe.v1.customers.create(params={"email": f"{label}{i}@bench.example"}).id
                 for i in range(count)]
    with engine.begin() as conn:
        conn.execute(insert(User.__table__), [
            {"email": f"{label}{i}@bench.example", "password_hash": "x", "provider_id": customer,
             "created_at": now, "updated_at": now} for i, customer in enumerate(customers)])
    return customers


def lifecycle_events(emulator, prices, customers):
    """Drive every customer's subscription through its life; return its events as JSON payloads.

    Payloads are in the order the provider created them (step by step across all customers, so
    consecutive events belong to different subscriptions), only of ``REQUIRED_EVENT_TYPES`` (what
    an endpoint set up by ``flask check-webhook`` receives), as ``{customer id: [bytes, ...]}``.
    """
    seen = {event["id"] for event in provider_events(emulator.stripe)}
    drive_lifecycles(emulator, emulator.stripe, prices, customers)
    by_customer = {customer: [] for customer in customers}
    for event in provider_events(emulator.stripe):
        customer = customer_of(event)
        if event["id"] not in seen and event["type"] in REQUIRED_EVENT_TYPES and customer in by_customer:
            by_customer[customer].append(json.dumps(event).encode())
    return by_customer


def in_creation_order(by_customer):
    """Interleave per-customer payload lists back into one stream, step by step across customers."""
    lists = list(by_customer.values())
    return [payload for step in itertools.zip_longest(*lists) for payload in step if payload is not None]


def post_concurrently(port, path, request_of, expected, senders, duration, limit):
    """POST ``request_of(index)`` (``(body, headers)``) for index 0, 1, ... from ``senders`` threads, each on a
    connection of its own, until ``limit`` requests are made or ``duration`` s pass.

    An answer is a failure unless it is ``expected`` (``(status, JSON body)``). Returns ``(latencies,
    failures, elapsed)``: the ms of each request answered, ``(status, text)`` per failure (``status``
    ``None`` when no answer came) and the seconds all took.
    """
    counter, latencies, failures = itertools.count(), [], []
    deadline = time.monotonic() + duration
    status, body = expected

    def sender():
        conn = http.client.HTTPConnection(HOST, port, timeout=30)
        while time.monotonic() < deadline:
            index = next(counter)
            if index >= limit:
                break
            payload, headers = request_of(index)
            started = time.perf_counter()
            try:
                conn.request("POST", path, body=payload, headers=headers)
                response = conn.getresponse()
                answer = response.read()
                latencies.append((time.perf_counter() - started) * 1000)
                if response.status != status or json.loads(answer) != body:
                    failures.append((response.status, answer[:200].decode(errors="replace")))
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
    return latencies, failures, time.perf_counter() - started


def drive_webhooks(port, payloads, senders, duration, secret):
    """POST signed ``payloads`` in order from ``senders`` threads until all are sent or ``duration`` s pass.

    Returns events/s, p50/p99 (ms), sent, ok and errors. Bounded in count (the payloads) and time.
    """
    def request_of(index):
        body = payloads[index]
        return body, {"Content-Type": "application/json", "Stripe-Signature": sign(body, secret)}

    latencies, failures, elapsed = post_concurrently(port, "/provider/webhook", request_of, (200, {"received": True}),
                                                     senders, duration, len(payloads))
    sent = len(latencies) + sum(1 for status, _ in failures if status is None)
    return {
        "events_per_s": (len(latencies) - sum(1 for s, _ in failures if s is not None)) / elapsed,
        "p50_ms": percentile(latencies, 0.50), "p99_ms": percentile(latencies, 0.99),
        "sent": sent, "ok": sent - len(failures), "errors": len(failures), "elapsed_s": elapsed,
        "failures_sample": failures[:5],
    }


def converged(emulator, engine, customers):
    """Return how many of the customers' subscriptions are stored with the provider's current status."""
    live = emulator.subscription_statuses()
    with engine.connect() as conn:
        stored = dict(conn.execute(
            select(Subscription.provider_id, Subscription.provider_status).join(User)
            .where(User.provider_id.in_(customers))).all())
    return sum(1 for sub, status in stored.items() if live.get(sub) == status)
