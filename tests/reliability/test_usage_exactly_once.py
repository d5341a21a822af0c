"""Usage events reach Stripe exactly once through crashes and a flaky Stripe (issue 34, "Done when").

The emulator's own meter event summaries are the witness: after every fault, the usage Stripe
aggregated for the customer equals the sum of the values accepted, and the emulator holds one meter
event per identifier.

- The delivery worker (a real ``flask deliver-usage`` process) is SIGKILLed while Stripe has
  recorded events whose answers are still on their way (the emulator's ``after`` fault: the request
  is done, its answer late): Stripe has them, the ledger does not know. Once the lease ends they are
  sent again with the same identifiers, Stripe answers "already exists", and they count as delivered.
- gunicorn's workers are SIGKILLed while backends post batches and retry each until ``202``: a batch
  killed before its commit stores nothing and its retry stores it; one killed after its commit but
  before its answer is stored, and its retry reports its events as duplicates.
- Two workers deliver side by side while Stripe answers 429 and 500 at random.
"""
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import requests
from sqlalchemy import func, select, update

from app.extensions import db
from app.models import UsageEvent
from app.models.usage import DELIVERED, PENDING
from tests.depth import budget
from tests.signing import WEBHOOK_SECRET
from tests.support.processes import ROOT, stop_workers
from tests.support.usage import add_customer_user, make_key


@pytest.fixture
def meter(stripe_client):
    return stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})


@pytest.fixture
def setup(make_app, stripe_client, meter):
    """``(app, customer id, user id, service key header)``."""
    app = make_app()
    customer = stripe_client.v1.customers.create(params={"email": "usage@example.com"}).id
    user_id = add_customer_user(app, customer, "usage@example.com")
    return app, customer, user_id, {"Authorization": f"Bearer {make_key(app.test_cli_runner())}"}


def batch(user_id, start, count=100):
    return {"events": [{"identifier": f"evt-{n}", "event_name": "tokens", "customer": {"user": user_id},
                        "value": n % 7 + 1} for n in range(start, start + count)]}


def expected(count):
    return sum(n % 7 + 1 for n in range(count))


def witnessed(stripe_client, meter, customer):
    now = int(time.time())
    return sum(s.aggregated_value for s in stripe_client.v1.billing.meters.event_summaries.list(
        meter.id, params={"customer": customer, "start_time": now - now % 60 - 3600,
                          "end_time": now - now % 60 + 600}).data)


def count(app, *where):
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(UsageEvent).where(*where))


def start_worker(database_url, emulator, log, *args):
    env = {**os.environ, "DATABASE_URL": database_url, "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
           "PROVIDER_API_BASE": emulator.url, "PROVIDER_API_KEY": "sk_test_x", "PROVIDER_MAX_NETWORK_RETRIES": "0",
           "FLASK_APP": "wsgi", "LOG_LEVEL": "WARNING"}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "flask", "deliver-usage", *args], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def wait_for(condition, logs, seconds=30):
    """Wait until ``condition()``; past ``seconds``, fail with the workers' ``logs`` (paths) as they are then."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, [log.read_text()[-5000:] for log in logs]
        time.sleep(0.05)


def test_a_worker_killed_between_stripes_answer_and_its_commit_bills_each_event_once(
        setup, database_url, emulator, stripe_client, meter, tmp_path, tally):
    app, customer, user_id, key = setup
    client = app.test_client()
    assert client.post("/usage/events", json=batch(user_id, 0), headers=key).json == {"accepted": 100,
                                                                                        "duplicates": 0}
    # Stripe records the first events of the batch, then its answers are late: the worker dies waiting.
    emulator.add_fault("/v1/billing/meter_events", status=None, count=8, delay_seconds=30, after=True)
    worker = start_worker(database_url, emulator, tmp_path / "worker.log")
    try:
        wait_for(lambda: len(emulator.store.meter_events) >= 8, [tmp_path / "worker.log"])
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        worker.kill()
    tally["faults_injected"] += 1
    emulator.clear_faults()
    received = len(emulator.store.meter_events)
    assert received >= 8 and count(app, UsageEvent.status == DELIVERED) == 0, "Stripe has them; the ledger not"
    with app.app_context():  # the dead worker's lease ends
        db.session.execute(update(UsageEvent).values(next_attempt_at=UsageEvent.created_at))
        db.session.commit()
    result = app.test_cli_runner().invoke(args=["deliver-usage", "--once"])
    assert "delivered 100, failed 0" in result.output, result.output
    assert len(emulator.store.meter_events) == 100, "each identifier reached Stripe once"
    assert witnessed(stripe_client, meter, customer) == expected(100)
    tally["usage_events_delivered"] += 100


def _post_until_accepted(url, body, key, answers):
    while True:
        try:
            answer = requests.post(f"{url}/usage/events", json=body, headers=key, timeout=30)
        except requests.RequestException:  # reset before or during the answer (ChunkedEncodingError too)
            answers.append("lost")
            continue
        if answer.status_code == 202:
            answers.append(answer.json())
            return
        answers.append(answer.status_code)  # a 5xx while the worker dies: retried as any client would
        time.sleep(0.05)


def test_the_service_killed_between_the_ledger_and_its_answer_stores_each_event_once(
        setup, gunicorn, emulator, stripe_client, meter, tally):
    app, customer, user_id, key = setup
    # 4,000 events under make test-deep; 1,600 keep make test quick and still see several kills.
    answers, batches = [], budget(quick=16, deep=40)
    threads = [threading.Thread(target=lambda first=first: [
        _post_until_accepted(gunicorn.url, batch(user_id, start), key, answers)
        for start in range(first * 100, batches * 100, 400)]) for first in range(4)]
    for thread in threads:
        thread.start()
    kills = 0
    while any(thread.is_alive() for thread in threads) and kills < 6:
        time.sleep(0.15)
        kills += bool(gunicorn.kill_workers())
    for thread in threads:
        thread.join(120)
    tally["faults_injected"] += kills
    accepted = [a for a in answers if isinstance(a, dict)]
    assert len(accepted) == batches
    assert count(app) == batches * 100, "every event stored once, whatever the kills hit"
    # A batch whose commit outlived its answer comes back as duplicates on the retry.
    assert sum(a["accepted"] for a in accepted) + sum(a["duplicates"] for a in accepted) == batches * 100
    tally["usage_answers_lost"] += sum(1 for a in answers if a == "lost")
    result = app.test_cli_runner().invoke(args=["deliver-usage", "--once"])
    assert f"delivered {batches * 100}" in result.output, result.output
    assert witnessed(stripe_client, meter, customer) == expected(batches * 100)


def test_two_workers_and_a_flaky_stripe_deliver_each_event_once(
        setup, database_url, emulator, stripe_client, meter, tmp_path, tally):
    app, customer, user_id, key = setup
    client = app.test_client()
    for start in range(0, 400, 100):
        assert client.post("/usage/events", json=batch(user_id, start), headers=key).status_code == 202
    emulator.add_fault("/v1/billing/meter_events", status=429, count=60, probability=0.2)
    emulator.add_fault("/v1/billing/meter_events", status=500, count=40, probability=0.2, after=True)
    logs = [tmp_path / f"worker{n}.log" for n in (1, 2)]
    workers = [start_worker(database_url, emulator, log) for log in logs]
    try:
        wait_for(lambda: count(app, UsageEvent.status == PENDING) == 0, logs, seconds=90)
    finally:
        assert stop_workers(workers, logs) == [0, 0]
    assert count(app, UsageEvent.status == DELIVERED) == 400
    assert len(emulator.store.meter_events) == 400, "each identifier reached Stripe once"
    assert witnessed(stripe_client, meter, customer) == expected(400)
    tally["usage_events_delivered"] += 400
    tally["faults_injected"] += 100 - sum(f["count"] for f in emulator.control("GET", "faults")["faults"])
