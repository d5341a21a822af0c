"""The notification delivery worker (issue 10): one worker draining the outbox to a local SMTP server."""
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime

from sqlalchemy import func, insert, select

from app.models import Notification
from scripts.bench.processes import Service
from scripts.bench.settings import HOST, REPO, log
from scripts.bench.table import fmt
from tests.ports import free_port

DELIVERIES = 2_000


def bench_delivery_worker(db, env, user_id, workdir, count=DELIVERIES):
    """Queue ``count`` email deliveries, drain them with one ``flask deliver-notifications --once`` to a
    local aiosmtpd server (its ``Sink`` handler accepts and drops); return the rate and the counts.

    The rate is over the span of the rows' ``delivered_at`` (the worker's own sending time); the
    whole process, start-up and SMTP check included, is reported beside it.
    """
    from app.models import NotificationDelivery

    now = datetime.now(UTC)
    with db.engine.begin() as conn:
        conn.execute(insert(Notification.__table__), [
            {"user_id": user_id, "kind": "payment_failed", "event_id": f"evt_bench_delivery_{i}", "created_at": now,
             "data": {"subscription": "sub_bench", "invoice": f"in_bench_{i}", "attempt_count": 1,
                      "next_payment_attempt": None, "hosted_invoice_url": "https://pay.example/in"}}
            for i in range(count)])
        ids = conn.execute(select(Notification.id).where(Notification.event_id.like("evt_bench_delivery_%"))).scalars()
        conn.execute(insert(NotificationDelivery.__table__), [
            {"notification_id": i, "channel": "email", "status": "pending", "attempts": 0, "next_attempt_at": now,
             "created_at": now, "updated_at": now} for i in ids])
    smtp_port = free_port()
    smtp = Service("smtp", [sys.executable, "-m", "aiosmtpd", "-n", "-l", f"{HOST}:{smtp_port}",
                            "-c", "aiosmtpd.handlers.Sink"], env, workdir)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection((HOST, smtp_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"aiosmtpd did not come up: {smtp.log_path.read_text()[-2000:]}") from None
                time.sleep(0.1)
        started = time.perf_counter()
        worker = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "deliver-notifications", "--once"],
                                cwd=REPO, env={**env, "MAIL_SERVER": HOST, "MAIL_PORT": str(smtp_port)},
                                capture_output=True, text=True)
        wall = time.perf_counter() - started
    finally:
        smtp.stop()
    if worker.returncode != 0:
        raise RuntimeError(f"deliver-notifications failed:\n{worker.stdout}{worker.stderr}")
    # Only the rows queued here: the bench's own accounts have account emails of their own in the outbox.
    ours = select(Notification.id).where(Notification.event_id.like("evt_bench_delivery_%"))
    delivered = (NotificationDelivery.status == "delivered", NotificationDelivery.notification_id.in_(ours))
    with db.engine.connect() as conn:
        first, last, done = conn.execute(select(func.min(NotificationDelivery.delivered_at),
                                                func.max(NotificationDelivery.delivered_at),
                                                func.count()).where(*delivered)).one()
    span = (last - first).total_seconds() if done > 1 else None
    result = {"queued": count, "delivered": done, "seconds": span, "process_seconds": wall,
              "per_s": (done - 1) / span if span else None, "output": worker.stdout.strip().splitlines()[-1:]}
    log(f"delivery worker: {done} of {count} in {wall:.1f} s, {fmt(result['per_s'], 0)} notifications/s")
    return result


def delivery_rows(kind, r):
    """The table's delivery-worker row, when this database ran it (PostgreSQL)."""
    delivery = r.get("delivery")
    if delivery is None:
        return []
    return [[kind, "notification delivery worker, email to local aiosmtpd, 1 worker (`--once`)",
             f"{fmt(delivery['per_s'], 0)} notifications/s", "", "", str(delivery["queued"] - delivery["delivered"]),
             f"{delivery['delivered']:,} of {delivery['queued']:,} delivered; "
             f"process {fmt(delivery['process_seconds'])} s with start-up", "(no target)", "info"]]
