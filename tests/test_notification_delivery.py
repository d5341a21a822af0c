"""The notification outbox and ``flask deliver-notifications`` against a real SMTP server and HTTP receiver.

Issue 10 items 3 and 4: one delivery row per configured channel in the notification's transaction,
both channels, backoff, dead rows and their retry, two workers on one queue, settings errors.
"""
import json
import threading
from datetime import timedelta

import pytest
import time_machine
from sqlalchemy import select
from standardwebhooks import Webhook

from app.config import ConfigError
from app.extensions import db
from app.models import NotificationDelivery, User
from app.notifications import notify, outbox
from app.notifications.channels import configured_channels
from app.signals import webhook_handled
from app.timeutil import utcnow
from tests.ports import free_port
from tests.receivers import NOTIFY_SECRET
from tests.support.config import BASE_CONFIG
from tests.support.events import deliver, load_event
from tests.support.notifications import KINDS_DATA, add_notifications, hook_config, mail_config, work


def deliveries(app):
    with app.app_context():
        db.session.expire_all()
        return [(d.channel, d.status, d.attempts) for d in
                db.session.scalars(select(NotificationDelivery).order_by(NotificationDelivery.id))]


def test_every_kind_is_mailed_as_text_and_html_and_posted_signed(make_app, smtp_server, http_receiver):
    app = make_app(**mail_config(smtp_server), **hook_config(http_receiver),
                   PROVIDER_PLANS={"price_basic": "basic", "price_pro": "pro"})
    ids = add_notifications(app, KINDS_DATA)
    assert deliveries(app) == [(channel, "pending", 0) for _ in KINDS_DATA for channel in ("email", "webhook")]

    result = work(app, "--once")
    assert result.exit_code == 0, result.output
    assert "delivered 20, failed 0 (retry scheduled), dead 0" in result.output
    assert deliveries(app) == [(channel, "delivered", 1) for _ in KINDS_DATA for channel in ("email", "webhook")]

    mails = {message["Message-ID"]: message for message in smtp_server.messages}
    assert sorted(mails) == sorted(f"<notification.{i}@example.com>" for i in ids)
    failed = mails[f"<notification.{ids[list(KINDS_DATA).index('payment_failed')]}@example.com>"]
    assert failed["To"] == "ada@example.com" and failed["From"] == "billing@example.com"
    assert failed["Subject"] == "Your payment failed"
    text, html = failed.get_body(("plain",)).get_content(), failed.get_body(("html",)).get_content()
    assert "attempt 2" in text and "01 January 2027" in text and "https://pay.example/in_1" in text
    assert 'href="https://pay.example/in_1"' in html
    changed = mails[f"<notification.{ids[list(KINDS_DATA).index('plan_changed')]}@example.com>"]
    assert "from basic to pro" in changed.get_body(("plain",)).get_content()
    expiring = mails[f"<notification.{ids[list(KINDS_DATA).index('card_expiring')]}@example.com>"]
    assert "visa ending in 4242" in expiring.get_body(("plain",)).get_content()
    assert len({message["Subject"] for message in mails.values()}) == len(KINDS_DATA)

    signer = Webhook(NOTIFY_SECRET)
    bodies = [signer.verify(body, headers) for headers, body in http_receiver.requests]
    assert [headers["Webhook-Id"] for headers, _ in http_receiver.requests] == [str(i) for i in ids]
    first = bodies[0]
    assert first["type"] == "subscribed"
    assert first["data"]["user"]["email"] == "ada@example.com"
    assert first["data"]["notification"] == {"id": ids[0], "kind": "subscribed", "created_at": first["timestamp"],
                                             "data": KINDS_DATA["subscribed"]}


def test_a_signed_provider_event_reaches_the_inbox(make_app, smtp_server):
    app = make_app(**mail_config(smtp_server))
    client = app.test_client()
    with app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id="cus_00000000000000"))
        db.session.commit()
    with time_machine.travel(load_event("03")["created"], tick=True):
        for name in ("01", "03"):
            assert deliver(client, load_event(name)).status_code == 200
        assert work(app, "--once").exit_code == 0
    (message,) = smtp_server.messages
    assert (message["To"], message["Subject"]) == ("cus@example.com", "Your subscription is active")


def test_a_rolled_back_notification_queues_nothing(make_app, smtp_server):
    app = make_app(**mail_config(smtp_server))
    with app.app_context():
        user = User(email="ada@example.com", password_hash="x")
        db.session.add(user)
        db.session.commit()
        notify(user, "evt_1", "subscribed", KINDS_DATA["subscribed"])
        db.session.flush()
        db.session.rollback()

    def failing_listener(sender, event, **extra):
        raise RuntimeError("a later listener fails")

    client = app.test_client()
    with app.app_context():
        db.session.add(User(email="cus@example.com", password_hash="x", provider_id="cus_00000000000000"))
        db.session.commit()
    with time_machine.travel(load_event("03")["created"], tick=True), \
            webhook_handled.connected_to(failing_listener):
        assert deliver(client, load_event("03")).status_code == 500
    assert deliveries(app) == []
    assert work(app, "--once").exit_code == 0
    assert smtp_server.messages == []


def test_no_channel_configured_queues_nothing_and_the_worker_says_so(app):
    add_notifications(app, ["subscribed"])
    assert deliveries(app) == []
    result = work(app, "--once")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: no notification channel is configured: set MAIL_SERVER or NOTIFY_WEBHOOK_URL"]


def test_a_refused_message_backs_off_then_is_delivered(make_app, smtp_server):
    app = make_app(**mail_config(smtp_server))
    add_notifications(app, ["payment_failed"])
    smtp_server.reply = "451 4.3.0 try again later"
    start = utcnow()
    with time_machine.travel(start, tick=False) as clock:
        result = work(app, "--once")
        assert "delivered 0, failed 1 (retry scheduled), dead 0" in result.output
        with app.app_context():
            row = db.session.scalars(select(NotificationDelivery)).one()
            assert row.next_attempt_at == start + timedelta(seconds=60)
            assert "451" in row.last_error
        smtp_server.reply = None
        clock.shift(59)
        assert "delivered 0, failed 0" in work(app, "--once").output  # not due yet
        clock.shift(2)
        assert "delivered 1, failed 0" in work(app, "--once").output
    assert deliveries(app) == [("email", "delivered", 2)]
    assert len(smtp_server.messages) == 1


def test_backoff_grows_four_fold_and_is_capped():
    assert [outbox.retry_delay(n, 60) for n in (1, 2, 3, 7, 8)] == [
        timedelta(minutes=1), timedelta(minutes=4), timedelta(minutes=16), timedelta(hours=6), timedelta(hours=6)]


def test_out_of_attempts_is_dead_listed_and_retried(make_app, http_receiver):
    app = make_app(**hook_config(http_receiver, NOTIFY_MAX_ATTEMPTS=2))
    (note,) = add_notifications(app, ["subscription_ended"])
    http_receiver.status = 503
    with time_machine.travel(utcnow(), tick=False) as clock:
        work(app, "--once")
        clock.shift(61)
        assert "delivered 0, failed 0 (retry scheduled), dead 1" in work(app, "--once").output
        clock.shift(3600)
        assert "delivered 0, failed 0" in work(app, "--once").output  # dead rows are not tried again
    assert deliveries(app) == [("webhook", "dead", 2)]
    listed = work(app, "--dead")
    assert listed.exit_code == 0
    line, summary = listed.output.strip().splitlines()
    assert f"notification {note} subscription_ended" in line and "webhook" in line and "2 attempts" in line
    assert "HTTP 503" in line and summary == "1 dead delivery"

    http_receiver.status = 200
    assert work(app, "--retry-dead").output.strip() == "queued 1 dead delivery again"
    assert "delivered 1" in work(app, "--once").output
    assert deliveries(app) == [("webhook", "delivered", 1)]
    assert work(app, "--dead").output.strip() == "0 dead deliveries"
    # The same webhook-id on every attempt: the receiver can drop a repeat.
    assert {headers["Webhook-Id"] for headers, _ in http_receiver.requests} == {str(note)}
    assert len(http_receiver.requests) == 3


def test_two_workers_on_one_queue_deliver_each_notification_once(make_app, smtp_server):
    smtp_server.delay = 0.01  # so the two workers' batches overlap
    app = make_app(**mail_config(smtp_server))
    for number in range(6):
        add_notifications(app, list(KINDS_DATA), email=f"user{number}@example.com")
    delivered = {}

    def worker(name):
        with app.app_context():
            totals = outbox.run(configured_channels(app.config), app.config, once=True, stop=threading.Event())
            delivered[name] = totals["delivered"]
            db.session.remove()

    threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    ids = smtp_server.message_ids()
    assert len(ids) == 60 and len(set(ids)) == 60
    assert delivered["a"] + delivered["b"] == 60 and delivered["a"] > 0 and delivered["b"] > 0
    assert set(deliveries(app)) == {("email", "delivered", 1)}


def test_an_unreachable_smtp_server_stops_the_worker_in_one_line(make_app):
    app = make_app(MAIL_SERVER="127.0.0.1", MAIL_PORT=free_port())
    result = work(app, "--once")
    assert result.exit_code == 1
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: MAIL_SERVER: cannot reach the SMTP server 127.0.0.1:")


def test_the_worker_options_exclude_each_other(app):
    result = work(app, "--once", "--dead")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1 and "exclude each other" in result.output


@pytest.mark.parametrize("override, name", [
    ({"NOTIFY_WEBHOOK_URL": "not a url", "NOTIFY_WEBHOOK_SECRET": NOTIFY_SECRET}, "NOTIFY_WEBHOOK_URL"),
    ({"NOTIFY_WEBHOOK_URL": "ftp://example.com/x", "NOTIFY_WEBHOOK_SECRET": NOTIFY_SECRET}, "NOTIFY_WEBHOOK_URL"),
    ({"NOTIFY_WEBHOOK_URL": "https://example.com:99999/", "NOTIFY_WEBHOOK_SECRET": NOTIFY_SECRET},
     "NOTIFY_WEBHOOK_URL"),
    ({"NOTIFY_WEBHOOK_URL": "https://example.com/hooks"}, "NOTIFY_WEBHOOK_SECRET is not set"),
    ({"NOTIFY_WEBHOOK_URL": "https://example.com/hooks", "NOTIFY_WEBHOOK_SECRET": "whsec_c2hvcnQ="},
     "NOTIFY_WEBHOOK_SECRET"),
    ({"NOTIFY_WEBHOOK_URL": "https://example.com/hooks", "NOTIFY_WEBHOOK_SECRET": "s3cr3t"}, "NOTIFY_WEBHOOK_SECRET"),
    ({"MAIL_PORT": "smtp"}, "MAIL_PORT"),
    ({"MAIL_PORT": "70000"}, "MAIL_PORT"),
    ({"MAIL_SERVER": "smtp.example.com:587"}, "MAIL_SERVER"),
    ({"MAIL_USE_TLS": "true", "MAIL_USE_SSL": "true"}, "MAIL_USE_TLS"),
    ({"MAIL_DEFAULT_SENDER": "nobody"}, "MAIL_DEFAULT_SENDER"),
    ({"NOTIFY_MAX_ATTEMPTS": "0"}, "NOTIFY_MAX_ATTEMPTS"),
])
def test_bad_channel_settings_stop_start_up_naming_the_setting(override, name):
    with pytest.raises(ConfigError, match=name):
        from app import create_app

        create_app({**BASE_CONFIG, **override})


def test_webhook_body_is_compact_json_of_the_contract_shape(make_app, http_receiver):
    app = make_app(**hook_config(http_receiver))
    add_notifications(app, ["trial_will_end"])
    work(app, "--once")
    ((headers, body),) = http_receiver.requests
    assert headers["Content-Type"] == "application/json"
    assert set(json.loads(body)) == {"type", "timestamp", "data"}
    assert headers["Webhook-Signature"].startswith("v1,")
