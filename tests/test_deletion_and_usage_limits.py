"""Deletion bills accepted usage, with bounded Stripe work; meter values Stripe takes; one swap per preview
(CONTRACT "Additions (sixth round)": "Changes to the fifth round"). Each finding reproduced through HTTP, the
real stripe SDK and the emulator, now gaining nothing: an account, an organisation or a preview's date tried
as a way to use what is never billed, or to make the service spend the Stripe account's request rate.
"""
from types import SimpleNamespace

import pytest
import stripe
from sqlalchemy import select

from app.billing.call_costs import PROVIDER_CALL_COSTS, USAGE_DELIVERED_ON_DELETION
from app.extensions import db
from app.models import UsageEvent
from app.models.usage import PENDING
from app.timeutil import utcnow
from tests.support.accounts import PASSWORD
from tests.support.billing import Flow, measured, post, start_flow, subscribe
from tests.support.organizations import Team
from tests.support.usage import live_config, prices  # noqa: F401  (a plan with a metered price on "tokens")


@pytest.fixture
def flow(live, emulator, stripe_client, prices, configure):  # noqa: F811
    flow = start_flow(live, emulator, stripe_client, prices)
    configure(PROVIDER_CALLS_RATE_LIMIT="10000 per minute")
    return flow


def verified_user(flow, name):
    """Another user, with a verified address (one who may create organisations), as a ``Flow`` of their own."""
    headers = Team.person(SimpleNamespace(client=flow.client, app=flow.app, headers={}), name)
    return Flow(flow.app, flow.base_url, flow.app.test_client(), headers, flow.emulator, flow.stripe, flow.prices)


def service_key(flow):
    runner = flow.app.test_cli_runner()
    return {"Authorization": f"Bearer {runner.invoke(args=['create-service-key', 'backend']).output.split()[-1]}"}


def report(flow, customer, values, prefix):
    """Report ``values`` of the ``tokens`` meter for ``customer`` (``{"user": id}`` or ``{"organization": id}``)
    as the client app's backend does; each answered ``202``, none delivered yet."""
    batch = {"events": [{"identifier": f"{prefix}-{n}", "event_name": "tokens", "customer": customer, "value": value}
                        for n, value in enumerate(values)]}
    accepted = flow.client.post("/usage/events", json=batch, headers=service_key(flow))
    assert (accepted.status_code, accepted.json) == (202, {"accepted": len(values), "duplicates": 0}), accepted.json


def usage_billed(flow, subscription_id):
    """``(quantity, amount)`` of every metered line on the subscription's invoices."""
    invoices = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    return [(line.quantity, line.amount) for invoice in invoices for line in invoice.lines.data
            if line.pricing.price_details.price == flow.prices["basic_usage"]]


def pending(flow):
    with flow.app.app_context():
        return sorted(db.session.scalars(select(UsageEvent.identifier).where(UsageEvent.status == PENDING)))


def stripe_calls(flow):
    return flow.emulator.control("GET", "requests")["total"]


def error_code(response):
    return response.status_code, response.json["error"]["code"]


# -- deletion bills the usage it accepted ------------------------------------------------------------------


def test_usage_accepted_just_before_an_organization_is_deleted_is_on_its_final_invoice(flow):
    """Forty tokens answered 202 a moment before the owner deletes the organisation: delivered before the
    cancel, so the final invoice bills them (they were marked failed and never billed)."""
    team = Team(flow)
    subscription_id = team.subscribe()
    report(flow, {"organization": team.org}, [25, 15], "team")
    gone = flow.client.delete(team.base, json={"password": PASSWORD}, headers=team.ada)
    assert gone.status_code == 204, gone.json
    assert usage_billed(flow, subscription_id) == [(40, 40 * 2)]
    assert pending(flow) == []


def test_a_deletion_stripe_cannot_take_the_usage_of_deletes_nothing(flow):
    """Stripe's meter events failing (5xx): 503, and the account, its subscription and its usage all stay,
    so that a later deletion still bills the usage."""
    subscription_id = subscribe(flow, "basic")
    report(flow, {"user": flow.me()["id"]}, [25, 15], "mine")
    flow.emulator.add_fault("/v1/billing/meter_events", status=500, count=10)
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert error_code(refused) == (503, "provider_unavailable")
    assert flow.client.get("/auth/me", headers=flow.headers).status_code == 200
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).status == "active"
    assert pending(flow) == ["mine-0", "mine-1"]
    flow.emulator.clear_faults()
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    assert usage_billed(flow, subscription_id) == [(40, 40 * 2)]


def test_more_usage_waiting_than_a_deletion_sends_waits_for_the_worker(flow):
    """A backlog past what one request delivers is refused (409) before any Stripe call, not dropped."""
    subscription_id = subscribe(flow, "basic")
    report(flow, {"user": flow.me()["id"]}, [1] * (USAGE_DELIVERED_ON_DELETION + 1), "backlog")
    before = stripe_calls(flow)
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert error_code(refused) == (409, "usage_pending")
    assert refused.json["error"]["details"] == {"pending": USAGE_DELIVERED_ON_DELETION + 1}
    assert stripe_calls(flow) == before, "refused before any Stripe call"
    assert "delivered 5" in flow.app.test_cli_runner().invoke(args=["deliver-usage", "--once"]).output
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    assert usage_billed(flow, subscription_id) == [(5, 5 * 2)]


# -- bounded Stripe work whatever the user owns ------------------------------------------------------------


def test_an_account_alone_in_two_billed_organizations_deletes_them_first(flow):
    first, second = Team(flow), Team(flow)
    first.subscribe()
    second.subscribe()
    before = stripe_calls(flow)
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert error_code(refused) == (409, "owns_organization")
    assert refused.json["error"]["details"] == {"organizations": sorted([first.org, second.org])}
    assert stripe_calls(flow) == before, "refused before any Stripe call"
    assert flow.client.get(first.base, headers=flow.headers).status_code == 200, "nothing deleted"
    assert flow.client.delete(first.base, json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204


def test_a_member_of_two_billed_organizations_leaves_one_first(flow):
    first, second = Team(flow), Team(flow)
    first.subscribe()
    second.subscribe()
    bob = first.person("bob")
    second.headers["bob"] = bob
    assert first.accept("bob", first.invite("bob")).status_code == 200
    assert second.accept("bob", second.invite("bob")).status_code == 200
    before = stripe_calls(flow)
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=bob)
    assert error_code(refused) == (409, "member_of_organizations")
    assert refused.json["error"]["details"] == {"organizations": sorted([first.org, second.org])}
    assert stripe_calls(flow) == before and first.members() == second.members() == 2
    bob_id = flow.client.get("/auth/me", headers=bob).json["id"]
    assert flow.client.delete(f"{first.base}/members/{bob_id}", headers=bob).status_code == 204
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=bob).status_code == 204
    assert second.members() == 1


def test_account_deletion_at_its_dearest_stays_within_its_cost(flow):
    """A user with a subscription and usage waiting, alone in a subscribed organisation with usage waiting,
    and a member of another subscribed one: one request, its Stripe calls at most its counted cost."""
    carol = verified_user(flow, "carol")
    subscription_id = subscribe(carol, "basic")
    report(carol, {"user": carol.me()["id"]}, [1] * USAGE_DELIVERED_ON_DELETION, "carol")
    alone = Team(carol)
    alone.subscribe()
    report(carol, {"organization": alone.org}, [1] * USAGE_DELIVERED_ON_DELETION, "alone")
    other = Team(flow)
    other.subscribe()
    other.headers["carol"] = carol.headers
    assert other.accept("carol", other.invite("carol")).status_code == 200
    status, calls = measured(flow, lambda: flow.client.delete("/auth/me", json={"password": PASSWORD},
                                                              headers=carol.headers))
    assert status == 204
    assert calls <= PROVIDER_CALL_COSTS["auth.delete_account"], calls
    assert usage_billed(flow, subscription_id) == [(4, 4 * 2)] and pending(flow) == []


def test_account_deletion_is_counted_in_the_provider_call_limit(flow, configure):
    cost = PROVIDER_CALL_COSTS["auth.delete_account"]
    configure(PROVIDER_CALLS_RATE_LIMIT=f"{cost} per minute")
    assert flow.client.get("/subscription/invoices", headers=flow.headers).status_code == 200
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert error_code(refused) == (429, "rate_limited")
    assert flow.client.get("/auth/me", headers=flow.headers).status_code == 200


# -- meter values ----------------------------------------------------------------------------------------


def test_a_meter_value_of_more_than_15_digits_is_refused_by_index(flow):
    subscribe(flow, "basic")
    me = {"user": flow.me()["id"]}
    batch = {"events": [{"identifier": "ok", "event_name": "tokens", "customer": me, "value": 10**15 - 1},
                        {"identifier": "long", "event_name": "tokens", "customer": me, "value": 12345678901234567}]}
    refused = flow.client.post("/usage/events", json=batch, headers=service_key(flow))
    assert error_code(refused) == (422, "validation_error")
    assert list(refused.json["error"]["details"]) == ["events.1.value"]
    assert pending(flow) == [], "nothing of the batch stored"


def test_the_emulator_refuses_a_value_of_more_than_15_significant_digits(flow):
    """As Stripe does since 2026-04-22, synchronously; trailing zeros are not significant."""
    customer = flow.stripe.v1.subscriptions.retrieve(subscribe(flow, "basic")).customer
    create = flow.stripe.v1.billing.meter_events.create
    with pytest.raises(stripe.InvalidRequestError, match="at most 15 digits"):
        create(params={"event_name": "tokens", "payload": {"stripe_customer_id": customer,
                                                           "value": "1234567890123456"}})
    assert create(params={"event_name": "tokens", "payload": {"stripe_customer_id": customer,
                                                              "value": "100000000000000000"}}).identifier


def test_pending_values_summing_past_2_63_are_read_exactly(flow):
    """Two values stored before the 15-digit rule, summing past a 64-bit integer: read exactly (a 500 else)."""
    customer = flow.stripe.v1.subscriptions.retrieve(subscribe(flow, "basic")).customer
    big = 2**62 + 1
    with flow.app.app_context():
        now = utcnow()
        db.session.add_all(UsageEvent(identifier=f"old-{n}", event_name="tokens", customer=customer, value=big,
                                      timestamp=int(now.timestamp()), status=PENDING, attempts=0,
                                      next_attempt_at=now, created_at=now) for n in range(2))
        db.session.commit()
    read = flow.client.get("/usage", headers=flow.headers)
    assert read.status_code == 200, read.json
    assert read.json["data"][0]["pending"] == 2 * big


# -- a preview's proration date serves one swap -----------------------------------------------------------


def test_a_previews_proration_date_serves_one_swap(flow):
    subscribe(flow, "pro")
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['basic']}", headers=flow.headers).json
    post(flow, "/subscription/swap", {"price": flow.prices["basic"], "proration_date": preview["proration_date"]})
    again = post(flow, "/subscription/swap", {"price": flow.prices["pro"],
                                              "proration_date": preview["proration_date"]}, expect=422)
    assert list(again.json["error"]["details"]) == ["proration_date"]
