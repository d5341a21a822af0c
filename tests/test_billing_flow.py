"""The whole product against the emulator, through the real stripe SDK and real HTTP webhooks.

register -> login -> intent -> pay at the provider -> webhook -> plan and card -> portal
cancellation -> grace period -> period end -> free; plus the intent rules of SPEC 4 rule 4.
"""
import threading
from datetime import UTC, datetime, timedelta

import pytest
import requests
import stripe
import time_machine
from flask_migrate import upgrade
from sqlalchemy import select, update

from app.extensions import db
from app.models import Subscription, User
from app.schema import bind as bind_migrations
from tests.support.accounts import bearer, login, register
from tests.support.billing import DAY
from tests.support.databases import MIGRATIONS
from tests.support.events import deliver


def test_subscribe_pay_cancel_at_period_end_and_fall_back_to_free(flow):
    assert flow.client.get("/subscription", headers=flow.headers).json == {"plan": "free", "subscription": None}
    started = flow.intent()
    subscription_id = started["subscription"]["id"]
    assert started["subscription"]["status"] == "incomplete" and started["client_secret"]
    assert flow.me()["plan"] == "free"

    flow.pay(started["client_secret"])
    assert "customer.subscription.updated" in flow.deliver()
    me = flow.me()
    assert me["plan"] == "basic"
    assert me["card"] == {"brand": "visa", "last4": "4242"}
    assert me["subscription"]["status"] == "active" and me["subscription"]["on_grace_period"] is False
    assert flow.notifications() == ["subscribed"]
    # CommitPaymentMethod promoted the subscription's card to the customer default at the provider.
    live_subscription = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    customer = flow.stripe.v1.customers.retrieve(live_subscription.customer)
    assert customer.invoice_settings.default_payment_method == live_subscription.default_payment_method

    flow.portal(subscription_id, "cancel_at_period_end")
    flow.deliver()
    me = flow.me()
    assert me["plan"] == "basic", "a cancelled user keeps the plan until the grace period ends"
    assert me["subscription"]["cancel_at_period_end"] is True and me["subscription"]["on_grace_period"] is True
    assert me["subscription"]["ends_at"] == me["subscription"]["current_period_end"]
    assert flow.notifications()[0] == "cancellation_scheduled"

    flow.emulator.advance(32 * DAY)
    assert "customer.subscription.deleted" in flow.deliver()
    me = flow.me()
    assert me["plan"] == "free" and me["subscription"]["status"] == "canceled"
    assert flow.notifications() == ["subscription_ended", "cancellation_scheduled", "subscribed"]


def test_resume_and_swap_in_the_portal(flow, configure):
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.deliver()
    subscription_id = started["subscription"]["id"]
    flow.portal(subscription_id, "cancel_at_period_end")
    flow.portal(subscription_id, "resume")
    flow.portal(subscription_id, "swap", price=flow.prices["pro"])
    flow.deliver()
    me = flow.me()
    assert me["plan"] == "pro" and me["subscription"]["cancel_at_period_end"] is False
    assert flow.notifications() == ["plan_changed", "cancellation_withdrawn", "cancellation_scheduled", "subscribed"]


def test_a_second_intent_for_the_same_price_reuses_the_pending_subscription(flow):
    first = flow.intent()
    again = flow.intent(expect=200)
    assert again == first
    assert len(flow.stripe.v1.subscriptions.list(params={"status": "all"}).data) == 1


def test_a_declined_card_leaves_the_subscription_pending_for_another_try(flow):
    first = flow.intent()
    with pytest.raises(stripe.CardError):
        flow.pay(first["client_secret"], card="pm_card_chargeDeclined")
    flow.deliver()
    assert flow.intent(expect=200)["subscription"]["id"] == first["subscription"]["id"]
    flow.pay(first["client_secret"])
    flow.deliver()
    assert flow.me()["plan"] == "basic"


def test_an_intent_for_another_price_replaces_the_pending_subscription(flow):
    first = flow.intent("basic")
    second = flow.intent("pro")
    assert second["subscription"]["id"] != first["subscription"]["id"]
    old = flow.stripe.v1.subscriptions.retrieve(first["subscription"]["id"])
    assert old.status in {"canceled", "incomplete_expired"}
    flow.pay(second["client_secret"])
    flow.deliver()
    assert flow.me()["plan"] == "pro"


def test_a_payment_that_cleared_before_its_webhook_is_not_torn_down(flow):
    # SPEC 4 rule 4: the page is reloaded after paying, before the webhook has arrived.
    started = flow.intent()
    flow.pay(started["client_secret"])
    conflict = flow.intent(expect=409)
    assert conflict["error"]["code"] == "already_subscribed"
    live_subscription = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"])
    assert live_subscription.status == "active"
    assert flow.me()["plan"] == "basic", "the sync committed the paid state"
    flow.deliver()
    assert flow.me()["plan"] == "basic"
    assert flow.notifications() == ["subscribed"]


def test_concurrent_intents_create_one_provider_subscription(flow):
    answers = []

    def call():
        answers.append(requests.post(f"{flow.base_url}/subscription/intent", json={"price": flow.prices["basic"]},
                                     headers=flow.headers, timeout=30))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 201]
    assert len({a.json()["subscription"]["id"] for a in answers}) == 1
    assert len(flow.stripe.v1.subscriptions.list(params={"status": "all"}).data) == 1


def test_unknown_price_is_refused(flow):
    response = flow.client.post("/subscription/intent", json={"price": "price_nope"}, headers=flow.headers)
    assert response.status_code == 422 and response.json["error"]["code"] == "unknown_price"


def test_provider_outage_answers_503_and_changes_nothing(flow):
    flow.emulator.add_fault("/v1/", status=500, count=20)
    response = flow.client.post("/subscription/intent", json={"price": flow.prices["basic"]}, headers=flow.headers)
    assert response.status_code == 503 and response.json["error"] == {
        "code": "provider_unavailable",
        "message": "The payment provider failed with an error (HTTP 500); try again shortly."}
    flow.emulator.clear_faults()
    with flow.app.app_context():
        assert db.session.scalars(select(Subscription)).all() == []
    assert flow.intent()["subscription"]["status"] == "incomplete"


def test_renewal_failure_and_recovery(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.deliver()
    flow.emulator.fail_next_renewal(started["subscription"]["id"])
    flow.emulator.advance(31 * DAY)
    flow.deliver()
    me = flow.me()
    assert me["subscription"]["status"] == "past_due" and me["plan"] == "free"
    # A second subscription would bill twice: the card is to be fixed in the portal instead.
    assert flow.intent(expect=409)["error"]["details"] == {"status": "past_due"}


def test_notifications_are_paginated_newest_first(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.deliver()
    flow.portal(started["subscription"]["id"], "cancel_at_period_end")
    flow.portal(started["subscription"]["id"], "resume")
    flow.deliver()
    page = flow.client.get("/notifications?limit=2", headers=flow.headers).json
    assert [n["kind"] for n in page["data"]] == ["cancellation_withdrawn", "cancellation_scheduled"]
    assert page["has_more"] is True
    rest = flow.client.get(f"/notifications?limit=2&starting_after={page['data'][-1]['id']}", headers=flow.headers)
    assert sorted(n["kind"] for n in rest.json["data"]) == ["payment_succeeded", "subscribed"]
    assert rest.json["has_more"] is False
    assert flow.client.get("/notifications?limit=0", headers=flow.headers).status_code == 422


def _migrated_sqlite_app(make_app, path):
    app = make_app(SQLALCHEMY_DATABASE_URI=f"sqlite:///{path}")
    with bind_migrations(app).app_context():
        upgrade(directory=MIGRATIONS)
    return app


def test_two_databases_sharing_one_stripe_account_get_their_own_customers(app, make_app, prices, tmp_path):
    # Staging and a developer's copy: each has its own user 1, with another email.
    customers = []
    for n in (1, 2):
        client = _migrated_sqlite_app(make_app, tmp_path / f"db{n}.db").test_client()
        assert register(client, email=f"user{n}@example.com")["id"] == 1
        headers = bearer(login(client, email=f"user{n}@example.com"))
        started = client.post("/subscription/intent", json={"price": prices["basic"]}, headers=headers)
        assert started.status_code == 201, started.json
        assert started.json["client_secret"]
        portal = client.post("/subscription/portal", json={}, headers=headers)
        assert portal.status_code == 200, portal.json
        customers.append(app_customer(client, headers))
    assert customers[0] != customers[1]


def app_customer(client, headers):
    with client.application.app_context():
        return db.session.scalar(select(User.provider_id).where(User.id == 1))


def test_sync_user_rebuilds_state_missed_by_webhooks(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])  # the webhooks stay undelivered
    runner = flow.app.test_cli_runner()
    result = runner.invoke(args=["sync-user", "ada@example.com"])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("ada@example.com: ")]
    changes = line.removeprefix("ada@example.com: ").split("; ")
    assert {"plan: - -> basic", "pm_type: - -> visa", "pm_last_four: - -> 4242"} <= set(changes)
    assert f"{started['subscription']['id']}.provider_status: incomplete -> active" in changes
    assert flow.me()["plan"] == "basic" and flow.me()["card"] == {"brand": "visa", "last4": "4242"}
    again = runner.invoke(args=["sync-user", "--all"])
    assert again.exit_code == 0 and again.stdout == (  # no blank line in a file
        "ada@example.com: unchanged\n"
        "users: checked 1, drifted 0, fixed 0, failed 0; organisations: checked 0, drifted 0, fixed 0, failed 0\n")


def test_sync_user_reports_every_field_it_changed(flow):
    started = flow.intent()
    subscription_id = started["subscription"]["id"]
    flow.pay(started["client_secret"])
    flow.deliver()
    flow.portal(subscription_id, "cancel_at_period_end")  # its webhook stays undelivered
    ends_at = datetime.fromtimestamp(flow.stripe.v1.subscriptions.retrieve(subscription_id).cancel_at, UTC)
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert f"ada@example.com: {subscription_id}.cancel_at_period_end: False -> True; " \
           f"{subscription_id}.ends_at: - -> {ends_at.isoformat().replace('+00:00', 'Z')}" in result.output.splitlines()


def test_sync_user_refuses_emails_with_all(flow):
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com", "--all"])
    assert result.exit_code == 2
    # One line (app/cli.py); the test runner names the command group after the app.
    assert result.output.splitlines() == [
        "Error: name EMAIL_OR_IDs or pass --all, not both (see 'app sync-user --help')"]


def test_sync_user_names_unknown_users_and_syncs_the_others(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])  # the webhooks stay undelivered
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "nobody@example.com", "ada@example.com", "999"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert any(line.startswith("ada@example.com: ") and "plan: - -> basic" in line for line in lines), lines
    assert lines[-1] == "Error: no user with email or id 'nobody@example.com', '999'"
    assert flow.me()["plan"] == "basic", "the known user was synced"


def test_check_webhook_names_missing_event_types(flow):
    runner = flow.app.test_cli_runner()
    assert runner.invoke(args=["check-webhook"]).exit_code == 0
    partial = flow.stripe.v1.webhook_endpoints.create(params={
        "url": "http://127.0.0.1:9/partial", "enabled_events": ["customer.subscription.updated"]})
    result = runner.invoke(args=["check-webhook", "--url", partial.url])
    assert result.exit_code == 1
    assert "customer.subscription.created" in result.output and "invoice.paid" in result.output


def test_grace_period_ends_on_our_clock_even_if_the_webhook_is_late(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.deliver()
    flow.portal(started["subscription"]["id"], "cancel_at_period_end")
    flow.deliver()
    end = datetime.strptime(flow.me()["subscription"]["ends_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    with time_machine.travel(end - timedelta(seconds=1), tick=False):
        flow.headers = bearer(login(flow.client))
        assert flow.me()["plan"] == "basic"
    with time_machine.travel(end, tick=False):
        assert flow.me()["plan"] == "free"


def test_a_late_event_does_not_bring_back_a_replaced_card(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.emulator.advance(60)  # the card switch happens in a later second than the payment
    flow.stripe.v1.subscriptions.update(started["subscription"]["id"],
                                        params={"default_payment_method": "pm_card_mastercard"})
    events = [e.to_dict(for_json=True) for e in flow.stripe.v1.events.list(
        params={"type": "customer.subscription.updated", "limit": 100}).data]  # newest first
    assert [set(e["data"]["previous_attributes"]) & {"default_payment_method"} for e in events] == [
        {"default_payment_method"}, {"default_payment_method"}]
    for event in events:  # newest first: the payment's event arrives after the switch
        assert deliver(flow.client, event, secret=flow.app.config["PROVIDER_WEBHOOK_SECRET"][0]).status_code == 200
    assert flow.me()["card"] == {"brand": "mastercard", "last4": "4444"}
    assert flow.me()["plan"] == "basic" and flow.notifications() == ["subscribed"]


def test_a_card_the_provider_refuses_to_promote_does_not_fail_the_webhook(flow):
    started = flow.intent()
    flow.pay(started["client_secret"])
    paying = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"]).default_payment_method
    flow.stripe.v1.payment_methods.detach(paying)  # before the webhooks that would promote it arrive
    flow.deliver()  # asserts every delivery answered 2xx
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    assert me["card"] is None, "the customer's current default (none) is mirrored instead"
    customer = flow.stripe.v1.customers.retrieve(flow.stripe.v1.subscriptions.retrieve(
        started["subscription"]["id"]).customer)
    assert customer.invoice_settings.default_payment_method is None


@pytest.mark.parametrize("path", ["/subscription/portal", "/subscription/intent"])
def test_a_customer_the_provider_no_longer_knows_is_a_502_not_a_500(flow, path):
    with flow.app.app_context():
        db.session.execute(update(User).values(provider_id="cus_forgotten"))
        db.session.commit()
    body = {"price": flow.prices["basic"]} if path.endswith("intent") else {}
    response = flow.client.post(path, json=body, headers=flow.headers)
    assert response.status_code == 502
    assert response.json["error"]["code"] == "provider_rejected"
    assert response.json["error"]["details"] == {"provider_code": "resource_missing"}
    assert "cus_forgotten" not in response.get_data(as_text=True)
    assert "sk_test" not in response.get_data(as_text=True)


@pytest.mark.parametrize("return_url", ["ftp://example.com/account", "javascript:alert(1)",
                                        "https://example.com/" + "a" * 2048], ids=["ftp", "javascript", "too-long"])
def test_portal_return_url_must_be_a_web_address_of_sane_length(flow, return_url):
    response = flow.client.post("/subscription/portal", json={"return_url": return_url}, headers=flow.headers)
    assert response.status_code == 422 and "return_url" in response.json["error"]["details"]


@pytest.mark.parametrize("path, body, field", [
    ("/subscription/portal", r'{"return_url": "https://example.com/\ud800"}', "return_url"),
    ("/subscription/intent", r'{"price": "price_\udfff"}', "price"),
])
def test_lone_surrogates_in_subscription_bodies_are_a_422(flow, path, body, field):
    response = flow.client.post(path, data=body, content_type="application/json", headers=flow.headers)
    assert response.status_code == 422, response.get_data(as_text=True)
    assert response.json["error"]["code"] == "validation_error"
    assert list(response.json["error"]["details"]) == [field]


def test_portal_sessions_are_created_with_an_idempotency_key(flow, configure):
    configure(CHECKOUT_ALLOWED_HOSTS=frozenset({"example.com"}))
    first = flow.client.post("/subscription/portal", json={"return_url": "https://example.com/a"}, headers=flow.headers)
    other = flow.client.post("/subscription/portal", json={"return_url": "https://example.com/b"}, headers=flow.headers)
    assert first.status_code == other.status_code == 200
    assert first.json["url"] != other.json["url"], "another return URL is another session"
    with flow.emulator.store.lock:
        keys = [key for _, key in flow.emulator.store.idempotency]
    assert sum(key.startswith("portal-") and "configuration" not in key for key in keys) == 2
