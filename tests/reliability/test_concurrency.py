"""Concurrency through a real gunicorn with four sync workers (CONTRACT "Webhook processing").

Parallel duplicates are processed once; events of one subscription racing each other leave the
newest state; whole lifecycles delivered shuffled and partly twice for 20 users (50 under make
test-deep) converge to what in-order delivery gives, each notification once; concurrent intents create one subscription.
On SQLite the same runs: writers queue on the file lock (``busy_timeout``) instead of row locks.
A 5xx is retried as the provider retries, and counted; the duplicates test allows none.
"""
import json
import random
from concurrent.futures import ThreadPoolExecutor

import requests
from sqlalchemy import func, select

from app.billing import objects
from app.billing.events import COMMIT_PLAN, SUBSCRIPTION_WRITING_TYPES, handled_by
from app.billing.statuses import is_valid
from app.extensions import db
from app.listeners.commit_plan import decide_notifications
from app.listeners.send_receipt import receipt_of
from app.models import Notification, Subscription, User, WebhookEvent
from app.timeutil import utcnow
from tests.depth import budget
from tests.support.accounts import PASSWORD
from tests.support.reliability import (
    STOPS,
    activating_update,
    add_customer_users,
    count_reorderings,
    deliver_until_accepted,
    drive_lifecycles,
    in_parallel,
    post_event,
    provider_events,
    start_paid_subscriptions,
    subscription_of,
)


def test_eight_parallel_deliveries_of_one_event_are_all_2xx_and_processed_once(
        gunicorn, app, emulator, stripe_client, prices, tally):
    subscriptions, events = start_paid_subscriptions(emulator, stripe_client, prices, app, 1)
    (subscription_id,) = subscriptions.values()
    event = activating_update(events, subscription_id)
    payload = json.dumps(event).encode()

    answers = in_parallel([lambda: post_event(gunicorn.url, event, payload=payload) for _ in range(8)])
    tally["webhook_deliveries"] += 8
    tally["duplicate_deliveries"] += 7
    tally["parallel_requests"] += 8

    assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
    with app.app_context():
        assert db.session.scalar(select(func.count()).select_from(WebhookEvent)) == 1
        assert db.session.scalars(select(Notification.kind)).all() == ["subscribed"]
        assert db.session.scalar(select(func.count()).select_from(Subscription)) == 1
        user = db.session.scalars(select(User)).one()
        assert (user.plan, user.pm_type, user.pm_last_four) == ("basic", "visa", "4242")


def test_created_and_updated_of_one_subscription_in_parallel_leave_one_row_in_the_newest_state(
        gunicorn, app, emulator, stripe_client, prices, tally):
    subscriptions, events = start_paid_subscriptions(emulator, stripe_client, prices, app, 6)
    for subscription_id in subscriptions.values():
        created = next(e for e in events if e["type"] == "customer.subscription.created"
                       and subscription_of(e) == subscription_id)
        updated = activating_update(events, subscription_id)
        answers = in_parallel([lambda e=e: deliver_until_accepted(gunicorn.url, e, tally) for e in (updated, created)])
        tally["parallel_requests"] += 2
        tally["reordered_deliveries"] += 1  # the update races, and often beats, its create
        assert [a.status_code for a in answers] == [200, 200]
    with app.app_context():
        rows = db.session.scalars(select(Subscription)).all()
        assert sorted(r.provider_id for r in rows) == sorted(subscriptions.values())
        assert {r.provider_status for r in rows} == {"active"}
        assert set(db.session.scalars(select(User.plan))) == {"basic"}
        assert db.session.scalar(select(func.count()).select_from(Notification)) == len(subscriptions)


def expected_plan(obj, plans, now):
    ends = objects.ends_at(obj, objects.current_period_end(obj))
    if is_valid(obj["status"], ends, now):
        return plans[objects.price_of(objects.items_of(obj)[0])]
    return None


def test_whole_lifecycles_delivered_shuffled_and_partly_twice_converge_to_in_order_delivery(
        gunicorn, app, emulator, stripe_client, prices, tally):
    users = add_customer_users(app, stripe_client, budget(quick=20, deep=50))
    emulator.pause_delivery()
    subscriptions = drive_lifecycles(emulator, stripe_client, prices, [customer for _, customer in users])
    events = provider_events(stripe_client)
    for order, event in enumerate(events):
        event["_order"] = order
    rng = random.Random(20240505)
    deliveries = [e for e in events for _ in range(2 if rng.random() < 0.3 else 1)]
    rng.shuffle(deliveries)
    tally["lifecycle_events"] += len(events)
    tally["duplicate_deliveries"] += len(deliveries) - len(events)
    tally["reordered_deliveries"] += count_reorderings(deliveries)
    tally["parallel_requests"] += len(deliveries)

    with requests.Session() as session, ThreadPoolExecutor(12) as pool:
        answers = list(pool.map(
            lambda e: deliver_until_accepted(gunicorn.url, {k: v for k, v in e.items() if k != "_order"}, tally,
                                             session=session), deliveries))
    assert {a.status_code for a in answers} == {200}

    # In-order delivery leaves each subscription as its provider's last event shows it.
    last = {}
    for event in events:
        if event["type"] in SUBSCRIPTION_WRITING_TYPES:
            last[subscription_of(event)] = event["data"]["object"]
    expected_notes = sorted([(e["id"], kind) for e in events if e["type"] in handled_by(COMMIT_PLAN)
                             for kind, _ in decide_notifications(e)]
                            # and a receipt for every paid invoice that took money (issue 28)
                            + [(e["id"], "payment_succeeded") for e in events
                               if e["type"] == "invoice.paid" and receipt_of(e["data"]["object"])])
    plans = {price: plan for plan, price in prices.items()}
    wrong = {}
    with app.app_context():
        now = utcnow()
        rows = {s.provider_id: s for s in db.session.scalars(select(Subscription))}
        for user_id, customer in users:
            user = db.session.get(User, user_id)
            obj = last[subscriptions[customer]]
            row = rows.get(obj["id"])
            want = (obj["status"], obj["cancel_at_period_end"], objects.price_of(objects.items_of(obj)[0]),
                    objects.current_period_end(obj), objects.ends_at(obj, objects.current_period_end(obj)),
                    expected_plan(obj, plans, now), ("visa", "4242"))
            have = row and (row.provider_status, row.cancel_at_period_end, row.provider_price,
                            row.current_period_end, row.ends_at, user.plan, (user.pm_type, user.pm_last_four))
            if have != want:
                wrong[customer] = (want, have)
        notes = sorted(db.session.execute(select(Notification.event_id, Notification.kind)).tuples())
        ledger = db.session.scalar(select(func.count()).select_from(WebhookEvent))
    # Counted before asserting: a failing run is exactly the one whose figure the report needs.
    tally["lost_updates"] += len(wrong) + len(set(expected_notes) ^ set(notes))
    assert not wrong, f"{len(wrong)} users not in their last state, e.g. {next(iter(wrong.items()), None)}"
    assert notes == expected_notes, "each notification exactly once"
    assert ledger == len(events)
    stops = {STOPS[i % 3] for i in range(len(users))}
    kinds = {kind for _, kind in notes}
    assert stops == set(STOPS) and {"subscribed", "plan_changed", "cancellation_scheduled",
                                    "cancellation_withdrawn", "subscription_ended"} <= kinds


def test_two_concurrent_intents_for_one_user_create_one_provider_subscription(
        gunicorn, stripe_client, prices, tally):
    for number in range(3):
        email = f"racer{number}@example.com"
        assert gunicorn.post("/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
        token = gunicorn.post("/auth/login", json={"email": email, "password": PASSWORD}).json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        answers = in_parallel([
            lambda h=headers: gunicorn.post("/subscription/intent", json={"price": prices["basic"]}, headers=h)
            for _ in range(2)])
        tally["parallel_requests"] += 2
        assert sorted(a.status_code for a in answers) == [200, 201], [a.text for a in answers]
        assert len({a.json()["subscription"]["id"] for a in answers}) == 1
    assert len(stripe_client.v1.subscriptions.list(params={"status": "all"}).data) == 3
