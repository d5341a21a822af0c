"""Notification delivery through an SMTP outage: every notification reaches the inbox exactly once.

Two real worker processes (``flask deliver-notifications``, long-running) share one queue on the
session's database while the SMTP server (aiosmtpd) goes down for a few seconds and comes back.
Attempts made meanwhile fail and back off (``NOTIFY_RETRY_DELAY=1``: 1 s, 4 s, 16 s, ...); once the
server is up, each notification is sent by one worker, once.
"""
import os
import subprocess
import sys
import time

from sqlalchemy import func, select

from app.extensions import db
from app.models import NotificationDelivery, User
from app.models.delivery import DELIVERED
from app.notifications import notify
from tests.receivers import SmtpSink
from tests.signing import WEBHOOK_SECRET
from tests.support.processes import ROOT, stop_workers

NOTIFICATIONS = 120
OUTAGE_SECONDS = 3


def start_worker(database_url, smtp_port, log):
    env = {**os.environ, "DATABASE_URL": database_url, "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
           "SECRET_KEY": "test secret key", "MAIL_SERVER": "127.0.0.1", "MAIL_PORT": str(smtp_port),
           "NOTIFY_RETRY_DELAY": "1",
           "FLASK_APP": "wsgi", "LOG_LEVEL": "WARNING"}
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, "-m", "flask", "deliver-notifications"], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)


def wait_started(workers, logs, seconds=30):
    """Wait until every worker has passed its start-up check of the SMTP server (its first line)."""
    deadline = time.monotonic() + seconds
    while not all("delivering notifications" in log.read_text() for log in logs):
        assert all(worker.poll() is None for worker in workers), [log.read_text() for log in logs]
        assert time.monotonic() < deadline, [log.read_text() for log in logs]
        time.sleep(0.1)


def delivered(app):
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(NotificationDelivery)
                                 .where(NotificationDelivery.status == DELIVERED))


def test_an_smtp_outage_delays_but_never_loses_or_repeats_a_notification(make_app, database_url, tally, tmp_path):
    smtp = SmtpSink().start()
    app = make_app(MAIL_SERVER="127.0.0.1", MAIL_PORT=smtp.port)
    logs = [tmp_path / f"worker{n}.log" for n in (1, 2)]
    workers = [start_worker(database_url, smtp.port, log) for log in logs]
    try:
        wait_started(workers, logs)
        smtp.stop()
        down_at = time.monotonic()
        with app.app_context():
            user = User(email="outage@example.com", password_hash="x", name="Outage")
            db.session.add(user)
            db.session.flush()
            for number in range(NOTIFICATIONS):
                notify(user, f"evt_outage_{number}", "payment_failed", {"subscription": "sub_outage",
                                                                         "invoice": f"in_{number}"})
                if number % 20 == 19:
                    db.session.commit()  # queued while the workers run, as webhooks would
        time.sleep(max(0, OUTAGE_SECONDS - (time.monotonic() - down_at)))
        smtp.start()
        outage = time.monotonic() - down_at
        deadline = time.monotonic() + 60
        while delivered(app) < NOTIFICATIONS and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)  # a late duplicate, if any, would arrive now
    finally:
        try:
            codes = stop_workers(workers, logs)
        finally:
            smtp.stop()

    ids = smtp.message_ids()
    with app.app_context():
        rows = db.session.scalars(select(NotificationDelivery)).all()
    failed_attempts = sum(row.attempts - 1 for row in rows)
    tally["notifications_queued"] += NOTIFICATIONS
    tally["notification_failed_attempts"] += failed_attempts
    tally["notifications_mailed"] += len(set(ids))
    tally["notifications_mailed_twice"] += len(ids) - len(set(ids))
    tally["smtp_outage_ms"] = max(tally["smtp_outage_ms"], round(outage * 1000))
    assert codes == [0, 0], [log.read_text() for log in logs]
    assert len(ids) == len(set(ids)) == NOTIFICATIONS
    assert {row.status for row in rows} == {DELIVERED}
    assert failed_attempts > 0  # the outage was seen: attempts failed and were retried
    assert all("delivered" in log.read_text().splitlines()[-1] for log in logs)
