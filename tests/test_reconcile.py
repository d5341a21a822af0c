"""``flask reconcile``: users left drifted on purpose (webhook delivery paused at the emulator) are
found and repaired by the same sync as ``flask sync-user`` (issue 11 item 2)."""
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import select

from app.billing import reconcile
from app.extensions import db
from app.models import Subscription, User

DAY = 86400


def summary(result):
    return result.stdout.strip().splitlines()[-1]


def states(app):
    """``{email: (plan as entitled now, [(status, price)], card)}`` of every user."""
    from app.billing.plans import entitled_plan

    with app.app_context():
        db.session.expire_all()
        return {user.email: (entitled_plan(user), [(s.provider_status, s.provider_price) for s in user.subscriptions],
                             user.pm_last_four)
                for user in db.session.scalars(select(User).order_by(User.id))}


class Provider:
    """The emulator side of the test: customers and subscriptions made with the real SDK."""

    def __init__(self, app, emulator, stripe_client, prices):
        self.app, self.emulator, self.stripe, self.prices = app, emulator, stripe_client, prices

    def user(self, email, customer=True):
        customer_id = self.stripe.v1.customers.create(params={"email": email}).id if customer else None
        with self.app.app_context():
            db.session.add(User(email=email, password_hash="x", provider_id=customer_id))
            db.session.commit()
        return customer_id

    def subscribe(self, customer_id, pay=True):
        created = self.stripe.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
            "customer": customer_id, "items": [{"price": self.prices["basic"]}],
            "payment_behavior": "default_incomplete",
            "payment_settings": {"save_default_payment_method": "on_subscription"},
            "expand": ["latest_invoice.confirmation_secret"]})
        if pay:
            self.pay(created)
        return created

    def pay(self, created):
        intent = created.latest_invoice.confirmation_secret.client_secret.split("_secret_")[0]
        self.stripe.v1.payment_intents.confirm(intent, params={"payment_method": "pm_card_visa"})

    def deliver(self):
        result = self.emulator.flush()
        assert result["failed"] == 0, result
        self.emulator.advance(60)

    def default_payment_method(self, customer_id):
        return self.stripe.v1.customers.retrieve(customer_id).invoice_settings.default_payment_method


@pytest.fixture
def provider(live, emulator, stripe_client, prices):
    app, _ = live
    emulator.pause_delivery()
    return Provider(app, emulator, stripe_client, prices)


def test_reconcile_repairs_every_drifted_user_and_reports_the_counts(provider):
    app, runner = provider.app, provider.app.test_cli_runner()
    paid_unseen, ended_unseen, swapped_unseen, healthy, cancelled = (
        provider.user(f"{name}@example.com") for name in ("paid", "ended", "swapped", "healthy", "cancelled"))
    provider.user("nocustomer@example.com", customer=False)
    pending = provider.subscribe(paid_unseen, pay=False)
    ended, swapped = provider.subscribe(ended_unseen), provider.subscribe(swapped_unseen)
    provider.subscribe(healthy)
    gone = provider.subscribe(cancelled)
    provider.deliver()
    provider.stripe.v1.subscriptions.update(ended.id, params={"cancel_at_period_end": True})
    provider.stripe.v1.subscriptions.cancel(gone.id)
    provider.deliver()

    # From here on no webhook reaches the service: each change below is drift.
    provider.pay(pending)
    provider.stripe.v1.subscriptions.update(swapped.id, params={
        "items": [{"id": swapped["items"].data[0].id, "price": provider.prices["pro"]}]})
    provider.emulator.advance(32 * DAY)  # the cancelled-at-period-end one ends, the others renew
    with time_machine.travel(datetime.fromtimestamp(provider.emulator.clock(), UTC), tick=False):
        before = states(app)
        assert before["paid@example.com"] == ("free", [("incomplete", provider.prices["basic"])], None)
        dry = runner.invoke(args=["reconcile", "--dry-run"])
        assert dry.exit_code == 0, dry.output
        # The healthy one drifted too: its renewal's webhooks never came, so its stored period end is
        # a month old (sync compares every stored field, issue 14 item 8).
        assert summary(dry) == ("users: checked 4, drifted 4, fixed 0, failed 0; "
                                "organisations: checked 0, drifted 0, fixed 0, failed 0 (dry run: nothing written)")
        assert states(app) == before
        assert provider.default_payment_method(paid_unseen) is None  # no write at the provider either

        fixed = runner.invoke(args=["reconcile"])
        assert fixed.exit_code == 0, fixed.output
        assert summary(fixed) == ("users: checked 4, drifted 4, fixed 4, failed 0; "
                                  "organisations: checked 0, drifted 0, fixed 0, failed 0")
        lines = fixed.stdout.splitlines()
        assert [line.split(":")[0] for line in lines[:-1]] == [
            "paid@example.com", "ended@example.com", "swapped@example.com", "healthy@example.com"]
        assert "current_period_end" in lines[3] and "provider_status" not in lines[3]
        after = states(app)
        assert after["paid@example.com"] == ("basic", [("active", provider.prices["basic"])], "4242")
        assert after["ended@example.com"] == ("free", [("canceled", provider.prices["basic"])], "4242")
        assert after["swapped@example.com"] == ("pro", [("active", provider.prices["pro"])], "4242")
        assert after["healthy@example.com"] == before["healthy@example.com"]
        assert after["cancelled@example.com"] == before["cancelled@example.com"]
        assert provider.default_payment_method(paid_unseen) is not None

        again = runner.invoke(args=["reconcile"])
        assert again.exit_code == 0 and summary(again) == ("users: checked 0, drifted 0, fixed 0, failed 0; "
                                                          "organisations: checked 0, drifted 0, fixed 0, failed 0")


def test_one_user_failing_does_not_stop_the_others_and_exits_non_zero(provider):
    app, runner = provider.app, provider.app.test_cli_runner()
    first, second = provider.user("first@example.com"), provider.user("second@example.com")
    pending = [provider.subscribe(customer, pay=False) for customer in (first, second)]
    provider.deliver()
    for created in pending:
        provider.pay(created)
    provider.emulator.add_fault("/v1/subscriptions", status=500, count=1)  # the first user's sync
    result = runner.invoke(args=["reconcile"])
    provider.emulator.clear_faults()
    assert result.exit_code == 1
    assert "first@example.com: FAILED (ProviderUnavailable" in result.stdout
    assert "users: checked 2, drifted 1, fixed 1, failed 1" in result.stdout
    assert "1 user(s) could not be synced" in result.output
    assert [state[1][0][0] for state in states(app).values()] == ["incomplete", "active"]


NOW = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize("status, ends_in_days, confirmed_days_ago, has_customer, chosen", [
    ("incomplete", None, 0, True, True),
    ("past_due", None, 0, True, True),
    ("unpaid", None, 0, True, True),
    ("active", -1, 0, True, True),       # the grace period has ended, the deletion never came
    ("trialing", -1, 0, True, True),
    ("active", 3, 0, True, False),       # still in its grace period
    ("active", None, 6, True, False),    # confirmed within RECONCILE_STALE_DAYS
    ("active", None, 8, True, True),     # not confirmed for longer
    ("canceled", None, 30, True, False),  # ended for good at the provider
    ("incomplete_expired", None, 30, True, False),
    ("incomplete", None, 0, False, False),  # no provider customer: nothing to sync from
])
def test_candidates_are_the_users_whose_state_may_have_drifted(
        app, status, ends_in_days, confirmed_days_ago, has_customer, chosen):
    with app.app_context():
        user = User(email="u@example.com", password_hash="x", provider_id="cus_1" if has_customer else None)
        db.session.add(user)
        db.session.add(Subscription(
            user=user, provider_id="sub_1", provider_status=status,
            ends_at=None if ends_in_days is None else NOW + timedelta(days=ends_in_days),
            provider_updated_at=NOW - timedelta(days=confirmed_days_ago)))
        db.session.commit()
        expected = [user.id] if chosen else []
        assert db.session.scalars(reconcile.candidates(stale_days=7, now=NOW)).all() == expected
