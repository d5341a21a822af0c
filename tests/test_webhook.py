"""``POST /provider/webhook`` with real Stripe payloads: SPEC 3 subscription table, SPEC 6, CONTRACT webhook rules."""
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from sqlalchemy import func, select

from app.billing import statuses
from app.errors import InvalidSignature
from app.extensions import db
from app.models import Notification, Subscription, User, WebhookEvent
from app.signals import webhook_handled
from tests.signing import WEBHOOK_SECRET, sign
from tests.support.events import CUSTOMER, DURING_PERIOD, deliver, load_event

SUBSCRIPTION = "sub_000000000000000000000000"


@pytest.fixture
def customer(app):
    with app.app_context():
        user = User(email="cus@example.com", password_hash="x", provider_id=CUSTOMER)
        db.session.add(user)
        db.session.commit()
        return user.id


@pytest.fixture(autouse=True)
def during_period():
    with time_machine.travel(DURING_PERIOD, tick=True):
        yield


def post(client, event, **sign_options):
    # Signed at the service's clock, which time_machine has moved (to the fixtures' period): the
    # provider's clock agrees with ours, else every delivery would fail the tolerance checks.
    return deliver(client, event, **{"timestamp": int(time.time()), **sign_options})


def snapshot(app):
    """Everything the webhook path may write, for before/after comparisons."""
    with app.app_context():
        db.session.expire_all()
        subscriptions = [(s.provider_id, s.provider_status, s.provider_price, s.cancel_at_period_end, s.ends_at,
                          [(i.provider_id, i.provider_price) for i in s.items])
                         for s in db.session.scalars(select(Subscription).order_by(Subscription.id))]
        notifications = [(n.kind, n.event_id)
                         for n in db.session.scalars(select(Notification).order_by(Notification.id))]
        users = [(u.plan, u.pm_type, u.pm_last_four) for u in db.session.scalars(select(User).order_by(User.id))]
        ledger = db.session.scalar(select(func.count()).select_from(WebhookEvent))
    return {"subscriptions": subscriptions, "notifications": notifications, "users": users, "ledger": ledger}


def user_state(client_app):
    with client_app.app_context():
        user = db.session.scalars(select(User).where(User.provider_id == CUSTOMER)).one()
        return user.plan, [(n.kind, n.data) for n in db.session.scalars(
            select(Notification).where(Notification.user_id == user.id).order_by(Notification.id))]


def accepted(response):
    assert response.status_code == 200, response.json
    assert response.json == {"received": True}
    return response


# SPEC 3 "Subscription lifecycle" and SPEC 6 rules 3 to 5


def test_created_incomplete_writes_the_row_without_notifying(app, client, customer):
    accepted(post(client, load_event("01")))
    state = snapshot(app)
    assert state["subscriptions"] == [(SUBSCRIPTION, "incomplete", "price_000000000000000000000000", False, None,
                                       [("si_00000000000000", "price_000000000000000000000000")])]
    assert user_state(app) == (None, [])  # incomplete is not entitled: free plan, and no "subscribed" on create


def test_created_active_grants_the_plan(app, client, customer):
    accepted(post(client, load_event("02")))
    assert user_state(app) == ("pro", [])


def test_payment_clearing_notifies_subscribed(app, client, customer):
    accepted(post(client, load_event("01", created=1648320100)))
    accepted(post(client, load_event("03", created=1648320200)))
    plan, notes = user_state(app)
    assert plan == "pro"
    assert notes == [("subscribed", {"subscription": SUBSCRIPTION, "from_status": "incomplete", "status": "active"})]


def test_cancellation_scheduled_keeps_the_plan_until_the_period_ends(app, client):
    with app.app_context():
        db.session.add(User(email="dj@example.com", password_hash="x", provider_id="cus_6lsBvm5rJ0zyHc"))
        db.session.commit()
    event = load_event("04")
    period_end = datetime.fromtimestamp(event["data"]["object"]["current_period_end"], UTC)
    with time_machine.travel(period_end.replace(day=1), tick=False):
        accepted(post(client, event))
        with app.app_context():
            user = db.session.scalars(select(User)).one()
            assert user.plan == "gold"
            (note,) = db.session.scalars(select(Notification)).all()
            assert (note.kind, note.data["ends_at"]) == ("cancellation_scheduled", int(period_end.timestamp()))
            (subscription,) = user.subscriptions
            assert subscription.ends_at == period_end
            assert statuses.on_grace_period(subscription, period_end.replace(day=1))
    # A second after the grace period the stored row no longer entitles (CONTRACT "User.plan").
    with time_machine.travel(period_end, tick=False), app.app_context():
        from app.billing.plans import entitled_plan
        assert entitled_plan(db.session.scalars(select(User)).one()) == "free"


def test_withdrawn_cancellation_notifies(app, client, customer):
    accepted(post(client, load_event("02", created=1648320100)))
    accepted(post(client, load_event("05", created=1648320200)))
    assert user_state(app) == ("pro", [("cancellation_withdrawn", {"subscription": SUBSCRIPTION})])


def test_plan_swap_notifies_and_recomputes_from_the_stored_row(app, client, customer):
    accepted(post(client, load_event("06", created=1648320200)))
    plan, notes = user_state(app)
    assert plan == "pro"
    assert notes == [("plan_changed", {"subscription": SUBSCRIPTION, "from": ["silver41294"],
                                       "to": ["price_000000000000000000000000"]})]


@pytest.mark.parametrize("name", ["07", "08"])
def test_updates_with_nothing_classified_notify_nobody(app, client, customer, name):
    accepted(post(client, load_event(name)))
    plan, notes = user_state(app)
    assert (plan, notes) == ("pro", [])


def test_trial_ending_is_not_a_new_subscription(app, client):
    with app.app_context():
        db.session.add(User(email="trial@example.com", password_hash="x", provider_id="cus_Nc4kL4EPtG5SKe"))
        db.session.commit()
    with time_machine.travel(datetime(2023, 4, 1, tzinfo=UTC), tick=False):
        accepted(post(client, load_event("09"), timestamp=int(time.time())))
    state = snapshot(app)
    assert state["notifications"] == [] and state["subscriptions"][0][1] == "active"


def test_deleted_ends_the_plan_and_notifies(app, client, customer):
    accepted(post(client, load_event("02", created=1648320000)))
    accepted(post(client, load_event("11", created=1648320300)))
    plan, notes = user_state(app)
    assert plan is None
    assert notes == [("subscription_ended", {"subscription": SUBSCRIPTION})]
    assert snapshot(app)["subscriptions"][0][1] == "canceled"


def test_new_shape_reads_the_period_from_items(app, client, customer):
    accepted(post(client, load_event("10")))
    with app.app_context():
        subscription = db.session.scalars(select(Subscription)).one()
        assert subscription.current_period_end == datetime.fromtimestamp(1488987924, UTC)
        assert subscription.ends_at == datetime.fromtimestamp(1487872069, UTC)
        assert subscription.provider_status == "canceled" and not statuses.entitles(subscription, DURING_PERIOD)


# 17, a paid one-off invoice, sends a receipt (tests/test_selling.py); its twin 18 does not.
@pytest.mark.parametrize("name", ["12", "13", "16", "18", "19", "21"])
def test_events_the_listeners_do_not_handle_change_nothing_but_the_ledger(app, client, name):
    event = load_event(name)
    obj = event["data"]["object"]
    if obj["object"] == "charge":
        obj["customer"] = CUSTOMER  # 21's charge has no customer: give it a known one
    # The event's customer is known and has a plan and a card, so a listener acting on the event
    # would show; an unknown customer's event is ignored before any listener runs.
    known = obj["id"] if obj["object"] == "customer" else obj["customer"]
    with app.app_context():
        db.session.add(User(email="known@example.com", password_hash="x", provider_id=known, plan="pro",
                            pm_type="visa", pm_last_four="4242"))
        db.session.commit()
    before = snapshot(app)
    accepted(post(client, event))
    assert snapshot(app) == {**before, "ledger": before["ledger"] + 1}


def test_customer_update_clearing_the_default_clears_the_card(app, client, stripe_client):
    # The card is read from the live customer (an update may arrive late): one without a default.
    live = stripe_client.v1.customers.create(params={"email": "pay@example.com"})
    with app.app_context():
        db.session.add(User(email="pay@example.com", password_hash="x", provider_id=live.id,
                            pm_type="visa", pm_last_four="4242"))
        db.session.commit()
    event = load_event("15")
    event["data"]["object"]["id"] = live.id
    accepted(post(client, event))
    assert snapshot(app)["users"] == [(None, None, None)]


def test_a_customer_whose_id_is_not_a_string_is_no_customer(app, client):
    # A number never names a customer: on PostgreSQL comparing it with provider_id was a 500, and
    # SQLite would match it to the user "5" (whose customer the provider does not know: a 500 too).
    with app.app_context():
        db.session.add(User(email="five@example.com", password_hash="x", provider_id="5",
                            pm_type="visa", pm_last_four="4242"))
        db.session.commit()
    event = load_event("15")
    event["data"]["object"]["id"] = 5
    response = post(client, event)
    assert response.status_code in (200, 400), response.json
    if response.status_code == 400:
        assert response.json["error"]["code"] == "invalid_payload"
    assert snapshot(app)["users"] == [(None, "visa", "4242")]


# CONTRACT "Webhook processing"


def test_a_redelivered_event_changes_nothing(app, client, customer):
    event = load_event("03", created=1648320200)
    accepted(post(client, load_event("01", created=1648320100)))
    accepted(post(client, event))
    once = snapshot(app)
    accepted(post(client, event))
    assert snapshot(app) == once
    assert [kind for kind, _ in once["notifications"]] == ["subscribed"]


def test_an_older_event_never_rolls_the_row_back(app, client, customer):
    accepted(post(client, load_event("03", created=1648320200)))   # active
    accepted(post(client, load_event("01", created=1648320100)))   # incomplete, but older
    assert snapshot(app)["subscriptions"][0][1] == "active"
    assert user_state(app)[0] == "pro"


def test_an_update_before_the_create_creates_the_row(app, client, customer):
    accepted(post(client, load_event("03", created=1648320200)))
    state = snapshot(app)
    assert [s[:2] for s in state["subscriptions"]] == [(SUBSCRIPTION, "active")]


def test_items_no_longer_present_are_deleted(app, client, customer):
    accepted(post(client, load_event("02", created=1648320100)))
    swapped = load_event("06", created=1648320200)
    swapped["data"]["object"]["items"]["data"][0]["id"] = "si_replacement"
    accepted(post(client, swapped))
    assert snapshot(app)["subscriptions"][0][5] == [("si_replacement", "price_000000000000000000000000")]


def test_events_for_unknown_customers_are_acknowledged_and_ignored(app, client):
    accepted(post(client, load_event("03")))
    state = snapshot(app)
    assert state["subscriptions"] == [] and state["notifications"] == []


@pytest.mark.parametrize("secret, age, message", [
    ("whsec_wrong", 0, InvalidSignature.message),
    (WEBHOOK_SECRET, 301, InvalidSignature.message),
    (WEBHOOK_SECRET, -301, "The webhook signature timestamp is in the future."),
], ids=["wrong-secret", "stale", "future"])
def test_bad_signatures_are_refused_and_nothing_is_stored(app, client, customer, secret, age, message):
    # Stamped from the service's (moved) clock, stopped so that 301 s stay 301 s until verified.
    with time_machine.travel(DURING_PERIOD, tick=False):
        response = post(client, load_event("02"), secret=secret, timestamp=int(time.time()) - age)
    assert response.status_code == 400
    assert response.json["error"] == {"code": "invalid_signature", "message": message}
    assert snapshot(app)["ledger"] == 0 and snapshot(app)["subscriptions"] == []


@pytest.mark.parametrize("age, accepted_", [(300, True), (-300, True), (301, False), (-301, False)])
def test_the_signature_tolerance_is_whole_seconds_both_ways(make_app, customer, age, accepted_):
    """Stripe's ``t`` and its tolerance are whole seconds: ``|now - t| <= tolerance`` is accepted, wherever
    within its second the service's clock is (here 0.9 s into it, so a 300 s old ``t`` is 300.9 s old)."""
    client = make_app(PROVIDER_WEBHOOK_TOLERANCE=300).test_client()
    with time_machine.travel(DURING_PERIOD + timedelta(seconds=0.9), tick=False):
        response = post(client, load_event("02"), timestamp=int(time.time()) - age)
    if accepted_:
        accepted(response)
    else:
        assert response.status_code == 400 and response.json["error"]["code"] == "invalid_signature"
        assert snapshot(client.application)["ledger"] == 0


def test_a_tampered_body_or_missing_header_is_refused(app, client, customer):
    payload = json.dumps(load_event("02")).encode()
    header = sign(payload, timestamp=int(time.time()))
    tampered = payload.replace(b'"active"', b'"trialing"')
    for headers in ({"Stripe-Signature": header}, {}):
        response = client.post("/provider/webhook", data=tampered, content_type="application/json", headers=headers)
        assert response.status_code == 400 and response.json["error"]["code"] == "invalid_signature"
    assert snapshot(app)["ledger"] == 0


def test_any_configured_secret_verifies_during_rotation(make_app, customer):
    client = make_app(PROVIDER_WEBHOOK_SECRET=f"whsec_new,{WEBHOOK_SECRET}").test_client()
    accepted(post(client, load_event("02")))


@pytest.mark.parametrize("body", [
    json.dumps({"hello": "world"}).encode(),
    json.dumps([1, 2, 3]).encode(),
    json.dumps({"id": "evt_1", "type": "customer.subscription.updated", "created": 1,
                "data": {"object": {"object": "invoice", "id": "in_1"}}}).encode(),
    # The ledger cannot store these ids and types (PostgreSQL text holds no NUL; columns of 255).
    json.dumps({"id": "evt_\u0000", "type": "customer.updated", "created": 1, "data": {"object": {}}}).encode(),
    json.dumps({"id": "evt_" + "x" * 300, "type": "customer.updated", "created": 1, "data": {"object": {}}}).encode(),
    json.dumps({"id": "evt_1", "type": "customer.\ud800", "created": 1, "data": {"object": {}}}).encode(),
    json.dumps({"id": "evt_1", "type": "customer.updated", "created": None, "data": {"object": {}}}).encode(),
])
def test_payloads_that_are_not_provider_events_are_refused(app, client, body):
    response = client.post("/provider/webhook", data=body, content_type="application/json",
                           headers={"Stripe-Signature": sign(body, timestamp=int(time.time()))})
    assert response.status_code == 400 and response.json["error"]["code"] == "invalid_payload"
    assert snapshot(app)["ledger"] == 0


def test_a_failure_in_a_listener_leaves_nothing_and_the_retry_succeeds(app, client, customer, configure):
    def explode(sender, event, **extra):
        raise RuntimeError("listener crashed")

    configure(PROPAGATE_EXCEPTIONS=False)
    event = load_event("02")
    with webhook_handled.connected_to(explode):
        response = post(client, event)
    assert response.status_code == 500 and response.json["error"]["code"] == "internal_error"
    assert snapshot(app) == {"subscriptions": [], "notifications": [], "users": [(None, None, None)], "ledger": 0}
    accepted(post(client, event))
    assert user_state(app)[0] == "pro" and snapshot(app)["ledger"] == 1


def test_webhook_handled_carries_the_verified_raw_event(app, client, customer):
    received = []

    def record(sender, event, **extra):
        received.append((sender, event))

    event = load_event("03")
    with webhook_handled.connected_to(record):
        accepted(post(client, event))
    assert received == [(app, event)]


def test_event_types_the_service_ignores_are_not_checked_for_their_object(app, client, customer):
    # An endpoint with every event enabled also gets customer.discount.*, which carries a discount.
    event = load_event("16", type="customer.discount.created")
    event["data"]["object"] = {"object": "discount", "id": "di_1", "customer": CUSTOMER}
    accepted(post(client, event))
    assert snapshot(app)["subscriptions"] == [] and snapshot(app)["notifications"] == []


@pytest.mark.parametrize("field, value", [
    ("created", {"not": "a timestamp"}), ("status", {"not": "a status"}), ("status", "x" * 33),
    ("ended_at", 10**19), ("items", {"object": "list", "data": [{"id": 5}]}), ("default_payment_method", 42),
])
def test_a_subscription_the_row_cannot_hold_is_refused_whole(app, client, customer, field, value):
    # Stored leniently, an unreadable status would read as "incomplete" and downgrade a paying user.
    event = load_event("03")
    event["data"]["object"][field] = value
    before = snapshot(app)
    response = post(client, event)
    assert response.status_code == 400, response.json
    assert response.json["error"]["code"] == "invalid_payload"
    assert field in response.json["error"]["details"]
    assert snapshot(app) == before


def test_a_tie_the_provider_cannot_resolve_leaves_the_row_and_is_acknowledged(app, client, customer):
    # Two active states of the same second: only the live subscription could order them, and the
    # provider (here the emulator) knows no such subscription. A 5xx would repeat that on every retry.
    activated = load_event("03")
    accepted(post(client, activated))
    before = snapshot(app)
    scheduled = load_event("03", id="evt_tied", created=activated["created"])
    scheduled["data"]["object"]["cancel_at_period_end"] = True
    accepted(post(client, scheduled))
    after = snapshot(app)
    assert (after["subscriptions"], after["users"], after["ledger"]) == (
        before["subscriptions"], before["users"], before["ledger"] + 1)


def test_a_tie_the_statuses_order_is_written_without_a_live_read(app, client, customer):
    # A creation's burst: incomplete, then active in the same second. A subscription never returns
    # to incomplete, so the active state is the newer one; the emulator knows no such subscription,
    # so a live read would have been refused and left the row incomplete.
    created = load_event("01")
    accepted(post(client, created))
    accepted(post(client, load_event("03", created=created["created"])))
    assert [row[1] for row in snapshot(app)["subscriptions"]] == ["active"]


def test_a_tied_state_at_an_earlier_status_stage_is_stale(app, client, customer):
    # The same burst delivered the other way round: the incomplete state is the older one.
    activated = load_event("03")
    accepted(post(client, activated))
    before = snapshot(app)
    accepted(post(client, load_event("01", created=activated["created"])))
    after = snapshot(app)
    assert [row[1] for row in after["subscriptions"]] == ["active"]
    assert (after["subscriptions"], after["users"]) == (before["subscriptions"], before["users"])
