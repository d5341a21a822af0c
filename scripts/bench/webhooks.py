"""Webhook ingest: the lifecycle mix from many senders under load, then deliveries one at a time."""
import json
from collections import Counter

from app.models import Notification, WebhookEvent
from scripts.bench.cpu import CpuMeter, children_of, postgres_pids
from scripts.bench.database import count_rows
from scripts.bench.settings import CONNECTIONS, WEBHOOK_SECRET, log
from scripts.bench.webhook_load import converged, drive_webhooks, in_creation_order, lifecycle_events, seed_customers


def measure_webhooks(port, emulator, db, prices, args, pids):
    """The webhook rows: the lifecycle mix from many senders, then a smaller one from one sender.

    ``prices`` (``{plan: price id}``) are the emulator prices the service maps in ``PROVIDER_PLANS``;
    ``pids`` is ``{"gunicorn": master pid, "emulator": pid}``, whose CPU time is counted per event.
    """
    customers = seed_customers(emulator, db.engine, f"hook-{db.kind}-", args.webhook_users + args.single_webhook_users)
    log(f"driving {len(customers)} subscription lifecycles at the emulator")
    events = lifecycle_events(emulator, prices, customers)
    loaded, single = customers[:args.webhook_users], customers[args.webhook_users:]
    payloads = in_creation_order({customer: events[customer] for customer in loaded})
    before_rows, before_calls = count_rows(db, WebhookEvent), emulator.api_requests()
    parts = {"workers": lambda: children_of(pids["gunicorn"]), "emulator": lambda: [pids["emulator"]],
             "senders": None}
    if db.kind == "postgres":
        parts["postgres"] = postgres_pids
    with CpuMeter(parts) as cpu:
        out = {"webhook": drive_webhooks(port, payloads, CONNECTIONS, args.duration, WEBHOOK_SECRET)}
    hook = out["webhook"]
    sent = hook["sent"]
    hook["cpu_ms_per_event"] = {name: seconds * 1000 / sent for name, seconds in cpu.seconds.items()} if sent else {}
    hook["provider_calls"] = emulator.api_requests() - before_calls
    hook["provider_calls_per_event"] = hook["provider_calls"] / hook["sent"] if hook["sent"] else None
    hook["ledger_rows"] = count_rows(db, WebhookEvent) - before_rows
    hook["notifications"] = count_rows(db, Notification)
    hook["users"], hook["events"] = len(loaded), len(payloads)
    hook["types"] = dict(sorted(Counter(json.loads(payload)["type"] for payload in payloads).items()))
    if hook["sent"] == len(payloads):
        # Every event delivered: each subscription must now hold the provider's status.
        hook["converged"] = converged(emulator, db.engine, loaded)
        hook["errors"] += len(loaded) - hook["converged"]
    if hook["ledger_rows"] != hook["ok"]:
        # Every delivery answered 200 must be in the ledger exactly once, and no other.
        hook["errors"] += abs(hook["ledger_rows"] - hook["ok"])
    log(f"webhooks: {hook['events_per_s']:.0f} events/s p50 {hook['p50_ms']:.1f} ms p99 {hook['p99_ms']:.1f} ms "
        f"errors {hook['errors']} (sent {hook['sent']} of {len(payloads)} in {hook['elapsed_s']:.1f} s; "
        f"{hook['provider_calls']} provider calls)")
    if single:
        out["webhook_single"] = drive_webhooks(port, in_creation_order({c: events[c] for c in single}), 1,
                                               args.duration, WEBHOOK_SECRET)
    return out
