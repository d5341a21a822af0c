"""The dunning, trial and card kinds decided from real payloads (CONTRACT "Additions", issue 10).

``payment_failed`` from both invoice shapes, ``past_due`` / ``payment_recovered`` from
``previous_attributes.status``, ``trial_will_end``; each at most once per event and kind,
nothing for an unchanged or replayed event. The emulator-driven flows are in
``tests/test_dunning_flow.py``.
"""
import copy
import time
from datetime import UTC, datetime

import pytest
import time_machine
from sqlalchemy import select

from app.extensions import db
from app.models import Notification, User
from app.notifications.kinds import NOTIFICATION_KINDS
from tests.support.events import deliver, load_event

SUBSCRIPTION = "sub_000000000000000000000000"


@pytest.fixture(autouse=True)
def during_period():
    # Inside the fixtures' billing period, signed at the service's clock (as tests/test_webhook.py).
    with time_machine.travel(datetime(2022, 4, 1, tzinfo=UTC), tick=True):
        yield


@pytest.fixture
def users(app):
    with app.app_context():
        db.session.add_all([User(email=f"{customer}@example.com", password_hash="x", provider_id=customer)
                            for customer in ("cus_00000000000000", "cus_1234")])
        db.session.commit()


def post(client, event):
    response = deliver(client, event, timestamp=int(time.time()))
    assert response.status_code == 200, response.json
    return response


def notifications(app):
    with app.app_context():
        rows = db.session.scalars(select(Notification).order_by(Notification.id))
        stored = [(n.kind, n.event_id, n.data) for n in rows]
    assert {kind for kind, _, _ in stored} <= set(NOTIFICATION_KINDS), "every kind stored is documented"
    return stored


def failed_invoice_old_shape():
    """Fixture 20 as API versions before 2025-03-31 send it: the subscription at the top level."""
    event = load_event("20", id="evt_old_shape_payment_failed")
    invoice = event["data"]["object"]
    invoice["subscription"] = invoice.pop("parent")["subscription_details"]["subscription"]
    return event


@pytest.mark.parametrize("event", [load_event("20"), failed_invoice_old_shape()], ids=["parent", "top-level"])
def test_a_failed_renewal_notifies_payment_failed_with_what_the_person_needs(app, client, users, event):
    post(client, event)
    assert notifications(app) == [("payment_failed", event["id"], {
        "subscription": "sub_1234", "invoice": "in_1234", "attempt_count": 1,
        "next_payment_attempt": 1745552783, "hosted_invoice_url": "https://invoice.stripe.com/"})]


def test_a_failed_one_off_invoice_notifies_nobody(app, client, users):
    event = load_event("20")
    event["data"]["object"]["parent"] = None
    post(client, event)
    assert notifications(app) == []


def test_the_last_retry_has_no_next_attempt(app, client, users):
    event = load_event("20")
    event["data"]["object"].update(attempt_count=4, next_payment_attempt=None)
    post(client, event)
    (note,) = notifications(app)
    assert note[2]["attempt_count"] == 4 and note[2]["next_payment_attempt"] is None


def test_a_failed_first_invoice_notifies_nobody(app, client, users):
    # Issue 21: the subscription is still incomplete; the payment form already told the person.
    event = load_event("20")
    event["data"]["object"]["billing_reason"] = "subscription_create"
    post(client, event)
    assert notifications(app) == []


def status_change(previous, current, event_id):
    event = load_event("03", id=event_id, created=1648320200)
    event["data"]["object"]["status"] = current
    event["data"]["previous_attributes"] = {"status": previous}
    return event


@pytest.mark.parametrize("previous, current, kind", [
    ("active", "past_due", "past_due"),
    ("trialing", "past_due", "past_due"),
    ("past_due", "unpaid", "past_due"),
    ("past_due", "active", "payment_recovered"),
    ("unpaid", "active", "payment_recovered"),
    ("incomplete", "active", "subscribed"),
])
def test_status_moves_into_and_out_of_dunning(app, client, users, previous, current, kind):
    event = status_change(previous, current, "evt_status")
    post(client, event)
    assert notifications(app) == [(kind, "evt_status", {
        "subscription": SUBSCRIPTION, "from_status": previous, "status": current})]


@pytest.mark.parametrize("previous_attributes", [{}, {"status": "past_due"}, {"latest_invoice": "in_1"}],
                         ids=["nothing-changed", "same-status", "status-not-changed"])
def test_a_subscription_still_in_dunning_notifies_nobody(app, client, users, previous_attributes):
    event = load_event("03", created=1648320200)
    event["data"]["object"]["status"] = "past_due"
    event["data"]["previous_attributes"] = previous_attributes
    post(client, event)
    assert notifications(app) == []


def test_a_replayed_failure_or_recovery_notifies_once(app, client, users):
    failed, recovered = load_event("20"), status_change("past_due", "active", "evt_recovered")
    for event in (failed, recovered, copy.deepcopy(failed), copy.deepcopy(recovered)):
        post(client, event)
    assert [(kind, event_id) for kind, event_id, _ in notifications(app)] == [
        ("payment_failed", failed["id"]), ("payment_recovered", "evt_recovered")]


def test_trial_will_end_carries_the_trial_end(app, client, users):
    event = load_event("02", type="customer.subscription.trial_will_end", id="evt_trial_will_end")
    event["data"]["object"].update(status="trialing", trial_end=1648579310)
    post(client, event)
    post(client, copy.deepcopy(event))
    assert notifications(app) == [("trial_will_end", "evt_trial_will_end",
                                   {"subscription": SUBSCRIPTION, "trial_end": 1648579310})]


# A trial created with its card is announced at once: tests/test_dunning_flow.py (through the emulator,
# which has the card); a Checkout trial once its session completed: tests/test_selling.py.
@pytest.mark.parametrize("status, kinds", [("trialing", []), ("active", []), ("incomplete", [])])
def test_a_subscription_created_without_its_card_is_not_announced(app, client, users, status, kinds):
    """An intent's trial starts for the customer once its SetupIntent saved the card, not on creation."""
    event = load_event("02", id="evt_created")
    event["data"]["object"].update(status=status, trial_end=1648579310, default_payment_method=None)
    post(client, event)
    post(client, copy.deepcopy(event))
    assert notifications(app) == [(kind, "evt_created", {"subscription": SUBSCRIPTION, "trial_end": 1648579310})
                                  for kind in kinds]


@pytest.mark.parametrize("previous, current, kinds", [("trialing", "paused", []), ("paused", "active", ["subscribed"])])
def test_a_trial_paused_without_a_card_and_resumed_by_one(app, client, users, previous, current, kinds):
    post(client, status_change(previous, current, "evt_pause"))
    assert [kind for kind, _, _ in notifications(app)] == kinds


def test_a_renewal_moving_the_period_on_the_items_is_no_plan_change(app, client, users):
    event = load_event("03", created=1648320200)
    items = copy.deepcopy(event["data"]["object"]["items"])
    for item in items["data"]:
        item["current_period_end"] = 1645900000  # the period before: only the period moved
    event["data"]["previous_attributes"] = {"items": items, "latest_invoice": "in_previous"}
    post(client, event)
    assert notifications(app) == []


def test_the_openapi_document_names_every_kind_of_the_contract(client):
    kind = client.get("/openapi.json").json["components"]["schemas"]["Notification"]["properties"]["kind"]
    assert kind["enum"] == ["subscribed", "cancellation_scheduled", "cancellation_withdrawn", "plan_changed",
                            "subscription_ended", "plan_change_scheduled", "plan_change_withdrawn",
                            "payment_failed", "past_due", "payment_recovered",
                            "trial_will_end", "card_expiring", "swap_payment_failed", "quantity_changed",
                            "trial_started", "password_changed", "email_change_requested",
                            "payment_succeeded", "member_joined", "invitation_accepted", "member_removed",
                            "ownership_transferred", "organization_deleted", "quota_warning", "quota_reached",
                            "member_left"]
    assert "hosted_invoice_url" in kind["description"] and "customer.subscription.trial_will_end" in kind["description"]
