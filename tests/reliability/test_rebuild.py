"""Rebuild (SPEC 1: nothing about a subscription is local-only).

Users mid-lifecycle at the provider, their webhooks delivered in order; then the subscription
tables and the users' plan and card columns are wiped and ``flask sync-user --all`` restores them
from the provider alone: the state afterwards equals the state before.
"""
from sqlalchemy import delete, select, update

from app.extensions import db
from app.models import Subscription, SubscriptionItem, User
from tests.support.events import deliver
from tests.support.reliability import TALLY, add_customer_users, drive_lifecycles, provider_events


def billing_state(app):
    with app.app_context():
        db.session.expire_all()
        users = {u.email: (u.provider_id, u.plan, u.pm_type, u.pm_last_four)
                 for u in db.session.scalars(select(User))}
        subscriptions = {
            s.provider_id: (s.user.email, s.provider_status, s.provider_price, s.quantity, s.cancel_at_period_end,
                            s.current_period_end, s.trial_ends_at, s.ends_at, s.provider_created_at, s.type,
                            sorted((i.provider_id, i.provider_price, i.provider_product, i.quantity) for i in s.items))
            for s in db.session.scalars(select(Subscription))}
    return users, subscriptions


def test_wiped_billing_state_is_rebuilt_identically_from_the_provider(app, emulator, stripe_client, prices):
    client = app.test_client()
    emulator.pause_delivery()
    users = add_customer_users(app, stripe_client, 7, prefix="rebuild")
    customers = [customer for _, customer in users]
    # Six through the lifecycle (ended, active, in the grace period); one only started, unpaid.
    drive_lifecycles(emulator, stripe_client, prices, customers[:6])
    stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customers[6], "items": [{"price": prices["pro"]}], "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"}})
    for event in provider_events(stripe_client):
        assert deliver(client, event).status_code == 200
        TALLY["webhook_deliveries"] += 1
    before = billing_state(app)
    assert {plan for _, plan, _, _ in before[0].values()} == {None, "basic"}
    assert len(before[1]) == 7

    with app.app_context():
        db.session.execute(delete(SubscriptionItem))
        db.session.execute(delete(Subscription))
        db.session.execute(update(User).values(plan=None, pm_type=None, pm_last_four=None))
        db.session.commit()
    assert billing_state(app)[1] == {}

    result = app.test_cli_runner().invoke(args=["sync-user", "--all"])
    assert result.exit_code == 0, result.output
    after = billing_state(app)
    TALLY["rebuilt_users"] += len(after[0])
    TALLY["lost_updates"] += sum(before[1].get(k) != after[1].get(k) for k in set(before[1]) | set(after[1]))
    assert after == before
