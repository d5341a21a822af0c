"""Stripe Entitlements turn on features (issue 44, CONTRACT "Additions (sixth round)", "Entitlements"): a
billable's active lookup keys are written only from what Stripe says, by
``entitlements.active_entitlement_summary.updated`` and by ``sync``, and read without a Stripe call.

The live service against the emulator through the real SDK, as tests/test_billing_flow.py. Each test is
a way a customer could keep a paid feature it no longer pays for, or miss one it pays for.
"""
from sqlalchemy import select

from app.entitlements.features import active_lookup_keys
from app.extensions import db
from app.models import Organization, StripeEntitlementSummary, User
from tests.support.billing import subscribe
from tests.support.entitlements import attach
from tests.support.events import deliver
from tests.support.organizations import Team

SUMMARY = "entitlements.active_entitlement_summary.updated"


def keys_of(flow, model=User, **where):
    with flow.app.app_context():
        billable = db.session.scalars(select(model).filter_by(**where)).one()
        return active_lookup_keys(billable)


def ada_keys(flow):
    return keys_of(flow, email="ada@example.com")


def customer_of(flow):
    with flow.app.app_context():
        return db.session.scalars(select(User.provider_id).where(User.email == "ada@example.com")).one()


def test_subscribing_turns_the_feature_on_after_the_webhook_and_ending_turns_it_off(flow):
    attach(flow, "sso")
    assert ada_keys(flow) == set()
    subscription_id = subscribe(flow)
    assert ada_keys(flow) == {"sso"}
    shown = flow.client.get("/entitlements", headers=flow.headers).json["features"]["sso"]
    assert (shown["enabled"], shown["source"]) == (True, "stripe")

    flow.stripe.v1.subscriptions.cancel(subscription_id)
    assert SUMMARY in flow.deliver()
    assert ada_keys(flow) == set()
    assert flow.client.get("/entitlements", headers=flow.headers).json["features"].get("sso", {}).get("enabled") \
        in (None, False)


def test_a_summary_of_more_than_ten_is_read_whole_from_stripe(flow):
    for n in range(12):
        attach(flow, f"feature-{n:02}")
    subscribe(flow)
    assert ada_keys(flow) == {f"feature-{n:02}" for n in range(12)}, "the event carries 10: the rest is read"


def test_a_late_summary_never_turns_a_feature_back_on(flow):
    attach(flow, "sso")
    started = flow.intent()
    flow.pay(started["client_secret"])
    flow.emulator.advance(5)  # the cancellation's summary is newer by seconds, as it would be at Stripe
    flow.stripe.v1.subscriptions.cancel(started["subscription"]["id"])
    with flow.emulator.store.lock:
        queue = flow.emulator.store.webhook_queue
        (granting, ending) = [d for d in queue if d["type"] == SUMMARY]
        queue.remove(granting)
    flow.deliver()
    assert ada_keys(flow) == set()
    with flow.emulator.store.lock:
        flow.emulator.store.webhook_queue.append(granting)  # the older summary, delivered late
    assert SUMMARY in flow.deliver()
    assert ada_keys(flow) == set(), "the older summary changed nothing"


def test_sync_repairs_a_lost_webhook(flow, runner):
    attach(flow, "sso")
    subscription_id = subscribe(flow)
    endpoint = flow.stripe.v1.webhook_endpoints.list().data[0]
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": True})
    flow.stripe.v1.subscriptions.cancel(subscription_id)  # its events are never sent: the endpoint is off
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": False})
    assert SUMMARY not in flow.deliver()
    assert ada_keys(flow) == {"sso"}, "still on: the webhook was lost"

    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert "stripe_features: sso -> -" in result.output
    assert ada_keys(flow) == set()


def test_sync_turns_on_what_a_lost_webhook_granted(flow):
    attach(flow, "sso")
    endpoint = flow.stripe.v1.webhook_endpoints.list().data[0]
    started = flow.intent()
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": True})
    flow.pay(started["client_secret"])
    flow.stripe.v1.webhook_endpoints.update(endpoint.id, params={"disabled": False})
    assert ada_keys(flow) == set()
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"])
    assert "stripe_features: - -> sso" in result.output, result.output
    assert ada_keys(flow) == {"sso"}


def test_a_summary_naming_a_customer_stripe_does_not_know_keeps_nothing(flow):
    attach(flow, "sso")
    subscribe(flow)
    with flow.app.app_context():
        row = db.session.scalars(select(StripeEntitlementSummary)).one()
        as_of = int(row.as_of.timestamp())
    customer = customer_of(flow)
    flow.stripe.v1.customers.delete(customer)  # Stripe ends its subscriptions with it
    event = {"id": "evt_forged_list", "object": "event", "type": SUMMARY, "created": as_of + 60, "livemode": False,
             "data": {"object": {"object": "entitlements.active_entitlement_summary", "customer": customer,
                                 "livemode": False, "entitlements": {"object": "list", "data": [], "has_more": True,
                                                                     "url": "/v1/x"}}}}
    answer = deliver(flow.client, event, secret=flow.app.config["PROVIDER_WEBHOOK_SECRET"][0])
    assert answer.status_code == 200, answer.json
    assert ada_keys(flow) == set(), "the list Stripe refuses to read grants nothing"


def test_an_organisations_features_are_its_own(flow):
    team = Team(flow)
    attach(flow, "sso")
    team.subscribe()
    assert keys_of(flow, Organization, id=team.org) == {"sso"}
    assert ada_keys(flow) == set(), "the owner's own account pays for nothing"
