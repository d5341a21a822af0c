"""Shared by the reliability tests and their conftest: a real gunicorn, signed deliveries with retries,
subscription lifecycles driven at the emulator, and the session's ``TALLY``."""
import json
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.signing import sign

WORKERS = 4


# Session-wide counts, written to bench-results/reliability.json; each key is explained in
# scripts/reliability_report.py.
TALLY = Counter()


class Gunicorn:
    """A running ``gunicorn -w 4 -k sync wsgi:app``; ``log`` holds its access and error log."""

    def __init__(self, url, process, log):
        self.url, self.process, self.log = url, process, log

    def workers(self):
        found = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True)
        return [int(pid) for pid in found.stdout.split()]

    def kill_workers(self):
        """SIGKILL every worker (a crash mid-request); the master starts new ones."""
        killed = self.workers()
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        return killed

    def wait_healthy(self, seconds=30, workers=WORKERS):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if requests.get(f"{self.url}/health", timeout=2).status_code == 200 and \
                        len(self.workers()) >= workers:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"gunicorn did not become healthy:\n{self.log.read_text()}")

    def post(self, path, **kwargs):
        return requests.post(f"{self.url}{path}", timeout=kwargs.pop("timeout", 30), **kwargs)

    def get(self, path, **kwargs):
        return requests.get(f"{self.url}{path}", timeout=kwargs.pop("timeout", 30), **kwargs)


def in_parallel(calls):
    """Run the callables at the same moment (a barrier), return their results in order."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        return list(pool.map(run, calls))


def post_event(base_url, event, session=None, payload=None, timeout=30):
    """POST ``event`` signed to ``base_url``'s webhook endpoint over HTTP; return the response."""
    payload = payload if payload is not None else json.dumps(event).encode()
    return (session or requests).post(
        f"{base_url}/provider/webhook", data=payload, timeout=timeout,
        headers={"Content-Type": "application/json", "Stripe-Signature": sign(payload)})


def deliver_until_accepted(base_url, event, tally, attempts=8, session=None):
    """Deliver like the provider does: a 5xx or a dropped connection is retried with backoff.

    Returns the final response; counts every attempt and every retry in ``tally``.
    """
    delay = 0.05
    for _attempt in range(attempts):
        tally["webhook_deliveries"] += 1
        try:
            response = post_event(base_url, event, session=session)
        except requests.ConnectionError:
            response = None
        if response is not None and response.status_code < 500:
            return response
        tally["webhook_retries_after_5xx"] += 1
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
    return response


def add_customer_users(app, stripe_client, count, prefix="user"):
    """Create ``count`` users, each with a provider customer; return ``[(user_id, customer_id)]``."""
    from app.extensions import db
    from app.models import User

    made = []
    with app.app_context():
        for number in range(count):
            email = f"{prefix}{number}@example.com"
            customer = stripe_client.v1.customers.create(params={"email": email})
            user = User(email=email, password_hash="unused", name=f"{prefix} {number}", provider_id=customer.id)
            db.session.add(user)
            db.session.flush()
            made.append((user.id, customer.id))
        db.session.commit()
    return made


# Where each user's life stops, so that final states differ: ended, active after a renewal, or
# cancelled at period end (still entitled, in the grace period).
STOPS = ("canceled", "active", "grace")


def drive_lifecycles(emulator, stripe_client, prices, customers):
    """Drive one subscription per customer through its life at the provider, step by step for all.

    subscribe -> pay -> swap to pro -> cancel at period end -> resume -> swap back -> renewal ->
    cancel at period end -> resume -> cancel; customer ``i`` stops at ``STOPS[i % 3]``. The clock
    moves a minute between steps, so most events of one subscription have distinct ``created``
    seconds (and a few share one, as at Stripe). Returns ``{customer_id: subscription_id}``.
    """
    subs = {}
    for customer in customers:
        created = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer, "items": [{"price": prices["basic"]}], "payment_behavior": "default_incomplete",
            "payment_settings": {"save_default_payment_method": "on_subscription"},
            "expand": ["latest_invoice.confirmation_secret"]})
        subs[customer] = created
    emulator.advance(60)
    for created in subs.values():
        intent = created.latest_invoice.confirmation_secret.client_secret.split("_secret_")[0]
        stripe_client.v1.payment_intents.confirm(intent, params={"payment_method": "pm_card_visa"})
    emulator.advance(60)

    def step(params, who=None):
        for index, created in enumerate(subs.values()):
            if who is None or who(index):
                body = params(created) if callable(params) else params
                stripe_client.v1.subscriptions.update(created.id, params=body)
        emulator.advance(60)

    item = lambda created, plan: {"items": [{"id": created["items"].data[0].id, "price": prices[plan]}]}  # noqa: E731
    step(lambda created: item(created, "pro"))
    step({"cancel_at_period_end": True})
    step({"cancel_at_period_end": False})
    step(lambda created: item(created, "basic"))
    emulator.advance(31 * 86400)
    step({"cancel_at_period_end": True})
    step({"cancel_at_period_end": False}, who=lambda index: STOPS[index % 3] != "grace")
    for index, created in enumerate(subs.values()):
        if STOPS[index % 3] == "canceled":
            stripe_client.v1.subscriptions.cancel(created.id)
    return {customer: created.id for customer, created in subs.items()}


def provider_events(stripe_client):
    """Return every event the emulator has recorded, oldest first (the order Stripe created them in)."""
    page = stripe_client.v1.events.list(params={"limit": 100})
    # The SDK turns Stripe's decimal strings into Decimal; back to the JSON the provider sends.
    return [json.loads(json.dumps(event.to_dict(), default=str)) for event in page.auto_paging_iter()][::-1]


def subscription_of(event):
    obj = event["data"]["object"]
    if obj.get("object") == "subscription":
        return obj["id"]
    return None


def count_reorderings(deliveries):
    """Return how many deliveries arrived after a newer event of the same customer had been delivered.

    ``deliveries`` are events in delivery order; each event's position in creation order is its
    ``_order`` key (added by the caller).
    """
    newest, reordered = {}, 0
    for event in deliveries:
        customer = customer_of(event)
        if event["_order"] < newest.get(customer, -1):
            reordered += 1
        newest[customer] = max(newest.get(customer, -1), event["_order"])
    return reordered


def customer_of(event):
    obj = event["data"]["object"]
    return obj["id"] if obj.get("object") == "customer" else (
        obj.get("customer") if isinstance(obj.get("customer"), str) else (obj.get("customer") or {}).get("id"))


def activating_update(events, subscription_id):
    return next(e for e in events if e["type"] == "customer.subscription.updated"
                and subscription_of(e) == subscription_id and "status" in e["data"]["previous_attributes"])


def start_paid_subscriptions(emulator, stripe_client, prices, app, count):
    customers = [customer for _, customer in add_customer_users(app, stripe_client, count)]
    emulator.pause_delivery()
    subscriptions = {}
    for customer in customers:
        created = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer, "items": [{"price": prices["basic"]}], "payment_behavior": "default_incomplete",
            "payment_settings": {"save_default_payment_method": "on_subscription"},
            "expand": ["latest_invoice.confirmation_secret"]})
        subscriptions[customer] = created.id
    emulator.advance(60)  # the payment is a later second than the creation, as in life
    for subscription_id in subscriptions.values():
        invoice = stripe_client.v1.subscriptions.retrieve(
            subscription_id, params={"expand": ["latest_invoice.confirmation_secret"]}).latest_invoice
        intent = invoice.confirmation_secret.client_secret.split("_secret_")[0]
        stripe_client.v1.payment_intents.confirm(intent, params={"payment_method": "pm_card_visa"})
    return subscriptions, provider_events(stripe_client)
