"""Checkout subscriptions delivered shuffled and partly twice (issue 28): each ends active, announced once.

Stripe creates a Checkout subscription already paid, so nothing but the session's completion
announces it, and its webhooks arrive in any order, some twice (pay-rails/pay#282,
laravel/cashier-stripe#1201, pay-rails/pay#612). Twenty customers complete a Checkout Session at the
emulator; every event is delivered to four gunicorn workers in parallel, shuffled, 30 % of them
twice. Each user must end with the active subscription and its plan, one ``subscribed`` and one
receipt.
"""
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import requests
from sqlalchemy import select

from app.extensions import db
from app.models import Notification, Subscription, User
from tests.support.reliability import add_customer_users, count_reorderings, deliver_until_accepted, provider_events

USERS = 20


def test_checkout_subscriptions_delivered_shuffled_and_partly_twice_end_active_and_announced_once(
        gunicorn, app, emulator, stripe_client, prices, tally):
    users = add_customer_users(app, stripe_client, USERS, prefix="checkout")
    emulator.pause_delivery()
    for _, customer in users:
        session = stripe_client.v1.checkout.sessions.create(params={
            "mode": "subscription", "customer": customer, "line_items": [{"price": prices["basic"], "quantity": 1}],
            "success_url": "http://localhost:3000/ok", "cancel_url": "http://localhost:3000/back",
            "allow_promotion_codes": True, "subscription_data": {"billing_mode": {"type": "classic"}}})
        completed = requests.post(f"{emulator.url}/_emulator/checkout_sessions/{session.id}/complete",
                                  json={"payment_method": "pm_card_visa"}, timeout=10)
        assert completed.status_code == 200, completed.text
    events = provider_events(stripe_client)
    for order, event in enumerate(events):
        event["_order"] = order
    rng = random.Random(20261124)
    deliveries = [e for e in events for _ in range(2 if rng.random() < 0.3 else 1)]
    rng.shuffle(deliveries)
    tally["lifecycle_events"] += len(events)
    tally["duplicate_deliveries"] += len(deliveries) - len(events)
    tally["reordered_deliveries"] += count_reorderings(deliveries)
    tally["parallel_requests"] += len(deliveries)

    with requests.Session() as session, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(
            lambda e: deliver_until_accepted(gunicorn.url, {k: v for k, v in e.items() if k != "_order"}, tally,
                                             session=session), deliveries))
    assert {a.status_code for a in answers} == {200}

    with app.app_context():
        plans = {user_id: plan for user_id, plan in db.session.execute(select(User.id, User.plan))}
        rows = db.session.scalars(select(Subscription)).all()
        notes = Counter((n.user_id, n.kind) for n in db.session.scalars(select(Notification)))
    wrong = [user_id for user_id, _ in users if plans[user_id] != "basic"]
    wrong += [row.provider_id for row in rows if row.provider_status != "active"]
    wrong += [user_id for user_id, _ in users
              if (notes[(user_id, "subscribed")], notes[(user_id, "payment_succeeded")]) != (1, 1)]
    tally["lost_updates"] += len(wrong)
    assert len(rows) == USERS and not wrong, wrong
