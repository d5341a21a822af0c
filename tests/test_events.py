"""The table of event types (``app.billing.events``) is the one place the webhook path reads.

Every handled type reaches exactly the listeners the table names, writes the subscription row
exactly when the table says so, and is refused when it carries another object; the required
types are the table's, and ``flask check-webhook`` names a missing one.
"""
import pytest
from sqlalchemy import select

from app.billing import events
from app.billing.events import EVENT_TYPES, REQUIRED_EVENT_TYPES
from app.extensions import db
from app.listeners import commit_plan
from app.models import Subscription, User
from app.signals import webhook_handled
from tests.support.events import deliver, load_event, openapi_example

CUSTOMER = "cus_00000000000000"

# A real payload carrying each kind of object the table names, with nothing in it that would
# make a listener call the provider: no previous_attributes, a one-off invoice, no card. No real
# SetupIntent event is among the fixtures: Stripe's own example object goes into 02's envelope.
# Products, prices and Checkout Sessions have no real event among the fixtures either; the session
# names no subscription (one not paid yet), so no listener calls the provider.
CARRIERS = {"subscription": "02", "invoice": "17", "customer": "16", "setup_intent": "02", "product": "02",
            "price": "02", "checkout.session": "02", "tax_id": "02", "entitlements.active_entitlement_summary": "02",
            "subscription_schedule": "02"}


def carrier(kind, **changes):
    event = load_event(CARRIERS[kind], **changes)
    if kind == "setup_intent":
        event["data"]["object"] = {**openapi_example("setup_intent"), "customer": CUSTOMER}
    if kind in ("product", "price"):
        event["data"]["object"] = openapi_example(kind)
    if kind == "tax_id":
        event["data"]["object"] = {**openapi_example(kind), "customer": CUSTOMER}
    if kind == "checkout.session":
        event["data"]["object"] = {**openapi_example(kind), "customer": CUSTOMER, "subscription": None}
    if kind == "subscription_schedule":  # of no subscription stored here: nothing to read from the provider
        event["data"]["object"] = {**openapi_example(kind), "customer": CUSTOMER}
    if kind == "entitlements.active_entitlement_summary":
        # Its whole list (has_more false): nothing is read from the provider.
        example = openapi_example(kind)
        event["data"]["object"] = {**example, "customer": CUSTOMER,
                                   "entitlements": {**example["entitlements"], "has_more": False}}
    return event


def event_of(event_type):
    event = carrier(EVENT_TYPES[event_type].object, type=event_type, id=f"evt_{event_type}")
    event["data"]["object"]["default_payment_method"] = None
    event["data"].pop("previous_attributes", None)
    return event


@pytest.fixture
def user_id(app):
    with app.app_context():
        user = User(email="known@example.com", password_hash="x", provider_id=CUSTOMER)
        db.session.add(user)
        db.session.commit()
        return user.id


def test_required_types_are_the_table_without_legacy_twins():
    assert set(REQUIRED_EVENT_TYPES) == {name for name, spec in EVENT_TYPES.items() if spec.twin_of is None}
    assert "invoice.payment_succeeded" not in REQUIRED_EVENT_TYPES
    assert EVENT_TYPES["invoice.payment_succeeded"].twin_of == "invoice.paid"
    # A twin is acted on exactly as its primary is, so either one an endpoint sends does the job.
    twin, primary = EVENT_TYPES["invoice.payment_succeeded"], EVENT_TYPES["invoice.paid"]
    assert (twin.object, twin.writes_subscription, twin.listeners) == \
        (primary.object, primary.writes_subscription, primary.listeners)


def test_every_listener_named_is_a_connected_receiver(app):  # create_app connects them
    receivers = {receiver.__name__ for receiver in webhook_handled.receivers_for(None)}
    assert {name for spec in EVENT_TYPES.values() for name in spec.listeners} <= receivers


def test_commit_plan_decides_only_on_types_the_table_gives_it():
    assert set(commit_plan.DECIDERS) <= events.handled_by(events.COMMIT_PLAN)


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_each_type_reaches_exactly_the_listeners_the_table_names(app, user_id, event_type):
    with app.app_context():
        user = db.session.get(User, user_id)
        results = webhook_handled.send(app, event=event_of(event_type), user=user)
        db.session.rollback()
    acted = {receiver.__name__ for receiver, result in results if result}
    assert acted == set(EVENT_TYPES[event_type].listeners)


@pytest.mark.parametrize("event_type", ["charge.succeeded", "customer.source.expiring", "payment_method.attached"])
def test_types_outside_the_table_reach_no_listener(app, user_id, event_type):
    event = load_event("02", type=event_type)
    with app.app_context():
        results = webhook_handled.send(app, event=event, user=db.session.get(User, user_id))
        db.session.rollback()
    assert not any(result for _, result in results)


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_the_row_is_written_exactly_for_the_types_that_write_it(app, client, user_id, event_type):
    response = deliver(client, event_of(event_type))
    assert response.status_code == 200, response.json
    with app.app_context():
        rows = db.session.scalars(select(Subscription)).all()
    assert bool(rows) == EVENT_TYPES[event_type].writes_subscription


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES))
def test_a_type_carrying_another_object_is_refused(app, client, user_id, event_type):
    wrong = next(obj for obj in CARRIERS if obj != EVENT_TYPES[event_type].object)
    event = carrier(wrong, type=event_type)
    response = deliver(client, event)
    assert response.status_code == 400 and response.json["error"]["code"] == "invalid_payload"
    assert EVENT_TYPES[event_type].object in response.json["error"]["message"]


def test_check_webhook_names_each_required_type_missing(runner, stripe_client):
    for missing in REQUIRED_EVENT_TYPES:
        stripe_client.v1.webhook_endpoints.create(params={
            "url": f"https://example.com/{missing}",
            "enabled_events": [t for t in REQUIRED_EVENT_TYPES if t != missing]})
    result = runner.invoke(args=["check-webhook"])
    assert result.exit_code == 1
    for missing in REQUIRED_EVENT_TYPES:
        assert f"example.com/{missing}: missing {missing}" in result.output
