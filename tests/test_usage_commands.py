"""The usage commands as operators run them (issue 43, "Operators"): ``--json`` is always one JSON document,
a bare ``usage-replay`` says what to pass, and two ``deliver-usage --once`` on one backlog each exit at once
instead of waiting on the other's lease, every event still delivered once."""
import json
import os
import re
import subprocess
import time

import pytest
from sqlalchemy import func, select

from app.extensions import db
from app.models import UsageEvent
from app.models.usage import DELIVERED
from app.usage.delivery import LEASE, MAX_RETRY_DELAY
from tests.support.config import BASE_CONFIG
from tests.support.processes import FLASK, ROOT
from tests.support.usage import add_customer_user, event, make_key

# Two ``--once`` runs must both be done well within the longest back-off (what the second used to wait on
# the first's lease), let alone the lease itself.
ONCE_BOUND_SECONDS = 60
assert ONCE_BOUND_SECONDS < MAX_RETRY_DELAY < LEASE.total_seconds()


@pytest.fixture
def backend(app, stripe_client):
    """``(customer's user id, service key header)``, with a ``tokens`` meter at Stripe."""
    stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})
    customer = stripe_client.v1.customers.create(params={"email": "usage@example.com"}).id
    user_id = add_customer_user(app, customer, "usage@example.com")
    return user_id, {"Authorization": f"Bearer {make_key(app.test_cli_runner())}"}


def test_usage_events_json_is_one_array_and_empty_is_an_empty_array(client, runner, backend):
    user_id, key = backend
    for args in (["--json"], ["--failed", "--json"]):
        result = runner.invoke(args=["usage-events", *args])
        assert (result.exit_code, json.loads(result.output)) == (0, []), result.output

    assert client.post("/usage/events", json={"events": [event(user_id, "req-1", 5)]}, headers=key).status_code == 202
    listed = json.loads(runner.invoke(args=["usage-events", "--json"]).output)
    assert [(row["identifier"], row["value"], row["status"]) for row in listed] == [("req-1", 5, "pending")]
    assert json.loads(runner.invoke(args=["usage-events", "--failed", "--json"]).output) == []


@pytest.mark.parametrize("args, line", [
    ([], "Error: name at least one event ID, or pass --failed"),
    (["1", "--failed"], "Error: name event IDs or pass --failed, not both"),
])
def test_usage_replay_with_wrong_arguments_is_one_line_and_exit_status_2(runner, args, line):
    result = runner.invoke(args=["usage-replay", *args])
    # One line (app/cli.py); the test runner names the command group after the app.
    assert (result.exit_code, result.output.splitlines()) == (2, [f"{line} (see 'app usage-replay --help')"])


def _start_once(database_url, emulator, log):
    env = {**os.environ, "DATABASE_URL": database_url, "PROVIDER_API_BASE": emulator.url,
           "PROVIDER_API_KEY": "sk_test_x", "PROVIDER_MAX_NETWORK_RETRIES": "0", "LOG_LEVEL": "WARNING",
           "PROVIDER_WEBHOOK_SECRET": BASE_CONFIG["PROVIDER_WEBHOOK_SECRET"]}
    with log.open("wb") as out:
        return subprocess.Popen([*FLASK, "deliver-usage", "--once"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT)


def test_two_once_runs_on_one_backlog_each_exit_promptly_and_deliver_each_event_once(
        app, client, backend, database_url, emulator, tmp_path):
    user_id, key = backend
    count = 24
    body = {"events": [event(user_id, f"evt-{n}", n + 1) for n in range(count)]}
    assert client.post("/usage/events", json=body, headers=key).json == {"accepted": count, "duplicates": 0}
    # Every send takes a second: the run that claims the backlog (it fits one batch) holds its lease for
    # seconds, while the other, started with it, finds nothing it can claim.
    emulator.add_fault("/v1/billing/meter_events", status=None, count=count, delay_seconds=1.0)
    logs = [tmp_path / f"once{n}.log" for n in (1, 2)]
    started = time.monotonic()
    runs = [_start_once(database_url, emulator, log) for log in logs]
    try:
        codes = [run.wait(ONCE_BOUND_SECONDS - (time.monotonic() - started)) for run in runs]
    finally:
        for run in runs:
            run.kill()
    outputs = [log.read_text() for log in logs]
    assert codes == [0, 0], outputs
    # One delivered the backlog; the other exited while it was still leased, leaving it to its holder.
    totals = sorted(int(n) for text in outputs for n in re.findall(r"delivered (\d+), failed 0, retried 0", text))
    assert totals == [0, count], outputs
    assert any(f"{count} pending left to other workers" in text for text in outputs), outputs
    identifiers = [sent["identifier"] for sent in emulator.store.meter_events]
    assert sorted(identifiers) == sorted(f"evt-{n}" for n in range(count)), "each event reached Stripe once"
    with app.app_context():
        delivered = db.session.scalar(select(func.count()).select_from(UsageEvent)
                                      .where(UsageEvent.status == DELIVERED))
    assert delivered == count
