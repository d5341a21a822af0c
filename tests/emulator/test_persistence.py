"""``--state-file``: the emulator, run as ``make run`` runs it, finds its objects again after a restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
import stripe

from scripts.stripe_emulator.core import persistence
from scripts.stripe_emulator.core.store import Store
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


class Emulator:
    """``python -m scripts.stripe_emulator --state-file ...`` as a process."""

    def __init__(self, state_file, **env):
        self.url = f"http://127.0.0.1:{free_port()}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "scripts.stripe_emulator", "--port", self.url.rsplit(":", 1)[1],
             "--state-file", str(state_file)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **env})
        deadline = time.monotonic() + 20
        while True:
            try:
                requests.get(f"{self.url}/_emulator/clock", timeout=1)
                break
            except requests.ConnectionError:
                assert self.process.poll() is None and time.monotonic() < deadline, self.process.stderr.read()
                time.sleep(0.1)
        self.stripe = stripe.StripeClient("sk_test_x", base_addresses={"api": self.url}, max_network_retries=0)

    def stop(self):
        """Stop it as ``make run`` does (SIGTERM); return its exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(20)


def test_a_restarted_emulator_has_its_objects_clock_and_idempotency_keys(tmp_path):
    state_file = tmp_path / "emulator.json"
    first = Emulator(state_file)
    try:
        price = first.stripe.v1.prices.create(params={
            "unit_amount": 900, "currency": "usd", "recurring": {"interval": "month"},
            "product_data": {"name": "Basic"}, "lookup_key": "basic"})
        customer = first.stripe.v1.customers.create(params={"email": "ada@example.com"},
                                                   options={"idempotency_key": "customer-ada"})
        subscription = first.stripe.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer.id, "items": [{"price": price.id}], "payment_behavior": "default_incomplete"})
        requests.post(f"{first.url}/_emulator/clock/advance", json={"seconds": 3600}, timeout=10)
    finally:
        assert first.stop() == 0
    second = Emulator(state_file)
    try:
        assert second.stripe.v1.subscriptions.retrieve(subscription.id).customer == customer.id
        assert second.stripe.v1.prices.list(params={"lookup_keys": ["basic"]}).data[0].id == price.id
        assert requests.get(f"{second.url}/_emulator/clock", timeout=10).json()["offset_seconds"] == 3600
        again = second.stripe.v1.customers.create(params={"email": "ada@example.com"},
                                                  options={"idempotency_key": "customer-ada"})
        assert again.id == customer.id  # the stored answer, as Stripe replays a retried request
    finally:
        second.stop()


def test_a_webhook_that_got_no_2xx_is_retried_after_a_restart(tmp_path, receiver):
    """Issue 26 item 6: pending deliveries are in the state file; the restarted emulator retries them."""
    state_file = tmp_path / "emulator.json"
    receiver.statuses = [500] * 1000
    # 0.01 real seconds per Stripe second: retries after 0.6 s, 3 s, 18 s, ...
    first = Emulator(state_file, STRIPE_EMULATOR_RETRY_SCALE="0.01")
    try:
        first.stripe.v1.webhook_endpoints.create(params={"url": receiver.url, "enabled_events": ["customer.created"]})
        customer = first.stripe.v1.customers.create(params={"email": "ada@example.com"})
        receiver.wait_for(2, timeout=10)
        # The emulator counts an attempt once the receiver's answer is back, a moment after the
        # receiver saw the request: on a loaded machine the queue is read in between.
        deadline = time.monotonic() + 10
        while True:
            queue = requests.get(f"{first.url}/_emulator/delivery", timeout=10).json()["queue"]
            if [(item["type"], item["attempts"] >= 2) for item in queue] == [("customer.created", True)]:
                break
            assert time.monotonic() < deadline, queue
            time.sleep(0.05)
    finally:
        assert first.stop() == 0
    with receiver.lock:
        tried, receiver.statuses = len(receiver.requests), []
    second = Emulator(state_file, STRIPE_EMULATOR_RETRY_SCALE="0.01")
    try:
        events = receiver.wait_for(tried + 1, timeout=30)
        assert events[-1]["type"] == "customer.created" and events[-1]["data"]["object"]["id"] == customer.id
        deadline = time.monotonic() + 10
        while requests.get(f"{second.url}/_emulator/delivery", timeout=10).json()["queue"]:
            assert time.monotonic() < deadline, "the delivered event left the queue"
            time.sleep(0.1)
    finally:
        second.stop()


def test_an_unreadable_state_file_is_one_line(tmp_path):
    state_file = tmp_path / "emulator.json"
    state_file.write_text("{not json")
    result = subprocess.run([sys.executable, "-m", "scripts.stripe_emulator", "--port", str(free_port()),
                             "--state-file", str(state_file)], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"cannot read the emulator's state from {state_file}: ") and "remove the file" in line


@pytest.mark.parametrize("value", [{"obj_1": {"id": "obj_1", "n": 1}}, {("key", "tuple"): {1, 2}}],
                         ids=["objects", "tuple-keyed sets"])
def test_whatever_the_store_holds_is_saved_without_a_list_of_fields(tmp_path, value):
    store = Store()
    store.some_future_collection = value  # an attribute persistence was not told about
    persistence.save(store, tmp_path / "state.json")
    fresh = Store()
    assert persistence.load(fresh, tmp_path / "state.json")
    assert fresh.some_future_collection == value
