"""An adversarial review of organisations (issue 33, "Done when"): what a member's, an admin's or an
owner's token tried and must not get. Each test is a reproduction of a hole found, kept as its
regression test: a free seat on a plan with usage prices, Stripe calls past the per-user limit, two
owners from two transfers.

Through HTTP, the real stripe SDK, the emulator and its real webhooks, as tests/test_organization_billing.py.
"""
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
import requests

from app.billing.call_costs import PROVIDER_CALL_COSTS
from tests.support.accounts import PASSWORD
from tests.support.billing import portal_plan_changes
from tests.support.organizations import Team
from tests.support.selling import URLS, complete


@pytest.fixture
def usage_prices():
    """Asked for by a test whose plans carry a metered price each (``live_config``)."""
    return True


@pytest.fixture
def live_config(request, stripe_client, prices):
    """With ``usage_prices``: each plan gets a metered price on a ``tokens`` meter, as tests/test_usage_plans.py."""
    if "usage_prices" not in request.fixturenames:
        return {}
    meter = stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})
    product = stripe_client.v1.prices.retrieve(prices["basic"]).product
    metered = {plan: stripe_client.v1.prices.create(params={
        "product": product, "unit_amount": 2, "currency": "usd",
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}}).id
        for plan in ("basic", "pro")}
    prices.update({f"{plan}_usage": price for plan, price in metered.items()})
    return {"PROVIDER_PLANS": {price: plan for plan, price in metered.items()}}


@pytest.fixture
def team(flow):
    return Team(flow)


def seats_at_stripe(team, subscription_id):
    """The quantity of the subscription's licensed item (the plan's price, not its usage price)."""
    items = team.flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data
    return [item.quantity for item in items if item.price.id == team.flow.prices["basic"]]


def stripe_calls(team):
    return team.flow.emulator.control("GET", "requests")["total"]


def test_a_plan_with_usage_prices_still_charges_each_seat(usage_prices, team):
    # The subscription has two items (the seats and the usage): seats must follow members all the same.
    subscription_id = team.subscribe()
    assert seats_at_stripe(team, subscription_id) == [1]
    team.join("bob")
    assert seats_at_stripe(team, subscription_id) == [team.members()] == [2], "a member joined on an unpaid seat"
    invoices = team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    assert sorted(invoice.billing_reason for invoice in invoices) == ["subscription_create", "subscription_update"]
    assert all(invoice.status == "paid" for invoice in invoices), "the seat is charged at once"
    bob_id = team.client.get("/auth/me", headers=team.headers["bob"]).json["id"]
    assert team.client.delete(f"{team.base}/members/{bob_id}", headers=team.headers["bob"]).status_code == 204
    assert seats_at_stripe(team, subscription_id) == [1], "leaving lowers the seats"
    # Drift on such a subscription is found and set back too.
    item = next(i for i in team.flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data
                if i.price.id == team.flow.prices["basic"])
    team.flow.stripe.v1.subscriptions.update(subscription_id, params={
        "items": [{"id": item.id, "quantity": 4}], "proration_behavior": "none"})
    team.flow.deliver()
    fixed = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert f"{team.org} (Acme): seats 4 -> 1" in fixed.output, fixed.output
    assert seats_at_stripe(team, subscription_id) == [1]


def test_an_organizations_billing_routes_cost_what_the_users_cost(team, configure):
    # Routed a second time under /organizations/<id>, a view must not become a one-call endpoint.
    team.subscribe()
    cost = PROVIDER_CALL_COSTS["subscription.show_billing_details"]
    # A limit of its own from here (the store keys a count by its limit): two requests fit, not three.
    configure(PROVIDER_CALLS_RATE_LIMIT=f"{2 * cost + 1} per minute")
    for _ in range(2):
        assert team.client.get(f"{team.base}/subscription/billing-details", headers=team.ada).status_code == 200
    before = stripe_calls(team)
    refused = team.client.get(f"{team.base}/subscription/billing-details", headers=team.ada)
    assert refused.status_code == 429 and refused.json["error"]["code"] == "rate_limited"
    assert stripe_calls(team) == before


def test_an_organizations_update_is_counted_at_the_stripe_calls_it_makes(team, configure):
    # The customer's email and its name: two calls, both counted before either is made.
    team.subscribe()
    cost = PROVIDER_CALL_COSTS["organizations.update"]
    configure(PROVIDER_CALLS_RATE_LIMIT=f"{2 * cost + 1} per minute")

    def update(i):
        return team.client.patch(team.base, json={"name": f"Acme {i}", "billing_email": f"billing{i}@example.com"},
                                 headers=team.ada)

    for i in range(2):
        before = stripe_calls(team)
        assert update(i).status_code == 200
        assert stripe_calls(team) - before == cost
    before = stripe_calls(team)
    refused = update(2)
    assert refused.status_code == 429 and refused.json["error"]["code"] == "rate_limited"
    assert stripe_calls(team) == before


@pytest.mark.parametrize("request_of", [
    pytest.param(lambda team, i: team.client.patch(team.base, json={"billing_email": f"billing{i}@example.com"},
                                                   headers=team.ada), id="billing-email"),
    pytest.param(lambda team, i: team.client.patch("/auth/me", json={"name": f"Ada {i}"}, headers=team.ada),
                 id="own-name"),
    pytest.param(lambda team, i: team.client.get(f"{team.base}/usage", headers=team.ada), id="organization-usage"),
    pytest.param(lambda team, i: team.client.get("/usage", headers=team.ada), id="own-usage"),
    # Counted before the view runs, as every limited endpoint: a member id or a password the view refuses too.
    pytest.param(lambda team, i: team.client.delete(f"{team.base}/members/{10 ** 6 + i}", headers=team.ada),
                 id="remove-member"),
    pytest.param(lambda team, i: team.client.delete(team.base, json={"password": "not-it"}, headers=team.ada),
                 id="delete-organization"),
])
def test_requests_that_call_stripe_are_under_the_users_limit(team, request_of, configure):
    team.subscribe()  # the organisation has a customer and a subscription: every request below asks Stripe
    configure(PROVIDER_CALLS_RATE_LIMIT="20 per minute")
    answers = [request_of(team, i).status_code for i in range(25)]
    assert 429 in answers, answers
    before = stripe_calls(team)
    assert request_of(team, 99).status_code == 429
    assert stripe_calls(team) == before, "refused before any Stripe call"


def test_two_transfers_at_once_leave_one_owner(team):
    for name in ("bob", "cy"):
        team.join(name)
    ids = {name: team.client.get("/auth/me", headers=team.headers[name]).json["id"] for name in ("bob", "cy")}

    start = Barrier(2)  # both requests leave together, or the second would only see the first's result

    def transfer(name):
        start.wait()
        return requests.post(f"{team.flow.base_url}{team.base}/transfer", headers=team.ada, timeout=30,
                             json={"user_id": ids[name], "password": PASSWORD}).status_code

    with ThreadPoolExecutor(2) as pool:
        answers = sorted(pool.map(transfer, ("bob", "cy")))
    assert answers == [200, 403], answers
    roles = [member["role"] for member in team.client.get(f"{team.base}/members", headers=team.ada).json["data"]]
    assert sorted(roles) == ["admin", "member", "owner"], roles


@pytest.mark.parametrize("method", ["patch", "delete"])
def test_a_member_id_past_any_database_integer_is_no_member(team, method):
    answer = getattr(team.client, method)(f"{team.base}/members/{10 ** 30}", json={"role": "admin"}, headers=team.ada)
    assert answer.status_code == 404 and answer.json["error"]["code"] == "not_found", answer.json


def seats_of(team):
    return team.client.get(team.base, headers=team.ada).json["seats"]


def refused_while_starting(team, name):
    """``name`` registers, is invited and accepts while the organisation's subscription is being started:
    409 ``payment_pending``, nobody added; return the invitation, still valid."""
    team.person(name)
    invitation = team.invite(name)
    refused = team.accept(name, invitation)
    assert refused.status_code == 409 and refused.json["error"]["code"] == "payment_pending", refused.json
    assert team.members() == 1
    return invitation


def test_nobody_joins_while_the_organizations_checkout_is_open(team):
    """Checkout starts the subscription at the members it was opened with: an accept meanwhile would be a
    free seat, so it waits (409) and the invitation stays valid; after the payment, the seat is paid."""
    opened = team.client.post(f"{team.base}/subscription/checkout", json={"price": team.flow.prices["basic"], **URLS},
                              headers=team.ada)
    assert opened.status_code == 201, opened.json
    invitation = refused_while_starting(team, "bob")
    complete(team.flow, opened.json["id"])
    team.flow.deliver()
    assert team.accept("bob", invitation).status_code == 200, "the same invitation, once the first payment cleared"
    assert seats_of(team) == {"members": 2, "invitations": 0, "paid": 2}


def test_nobody_joins_while_the_organizations_first_payment_is_open(team):
    """An intent's subscription is ``incomplete`` until its first invoice is paid, at the quantity it was
    created with; a payment that cleared before its webhook counts (the accept syncs first)."""
    started = team.client.post(f"{team.base}/subscription/intent", json={"price": team.flow.prices["basic"]},
                               headers=team.ada)
    assert started.status_code == 201, started.json
    invitation = refused_while_starting(team, "bob")
    team.flow.pay(started.json["client_secret"])  # paid at Stripe; its webhooks not delivered yet
    assert team.accept("bob", invitation).status_code == 200
    team.flow.deliver()
    assert seats_of(team) == {"members": 2, "invitations": 0, "paid": 2}
    assert team.stripe_quantity(started.json["subscription"]["id"]) == 2


def test_accepting_while_the_organizations_checkout_is_open_is_under_the_users_limit(team, configure):
    """Each accept asks Stripe (the organisation's unended subscriptions, an open Checkout) and the
    invitation stays valid while the Checkout is open (409): a script looping it stops at the limit."""
    opened = team.client.post(f"{team.base}/subscription/checkout", json={"price": team.flow.prices["basic"], **URLS},
                              headers=team.ada)
    assert opened.status_code == 201, opened.json
    team.person("bob")
    invitation = team.invite("bob")
    configure(PROVIDER_CALLS_RATE_LIMIT="20 per minute")
    before = stripe_calls(team)
    answers = [team.accept("bob", invitation).status_code for _ in range(25)]
    calls = stripe_calls(team) - before
    assert 429 in answers and set(answers) == {409, 429} and calls <= 20, (answers, calls)


def test_a_checkout_paid_before_its_webhook_charges_the_seat_of_whoever_accepts(team):
    """The accept reads the organisation's unended subscriptions (one page, never its history): a Checkout
    completed whose webhooks have not arrived is live, and the new member's seat is charged on it."""
    opened = team.client.post(f"{team.base}/subscription/checkout", json={"price": team.flow.prices["basic"], **URLS},
                              headers=team.ada)
    team.person("bob")
    invitation = team.invite("bob")
    subscription_id = complete(team.flow, opened.json["id"])["subscription"]  # no webhook delivered
    assert team.accept("bob", invitation).status_code == 200
    assert team.stripe_quantity(subscription_id) == 2
    team.flow.deliver()
    assert seats_of(team) == {"members": 2, "invitations": 0, "paid": 2}


def test_an_abandoned_checkout_stops_holding_invitations_back_once_stripe_expires_it(team):
    opened = team.client.post(f"{team.base}/subscription/checkout", json={"price": team.flow.prices["basic"], **URLS},
                              headers=team.ada)
    assert opened.status_code == 201, opened.json
    team.person("bob")
    invitation = team.invite("bob")
    assert team.accept("bob", invitation).status_code == 409
    team.flow.emulator.control("POST", "clock/advance", {"seconds": 86400})  # Stripe expires it after 24 hours
    assert team.accept("bob", invitation).status_code == 200, "no subscription: members join freely"
    assert seats_of(team)["members"] == 2


def test_the_portal_changes_no_plan_that_has_usage_prices(usage_prices, flow, configure):
    """A portal swap moves only the licensed item's price, so the plan's metered items would stay the
    old plan's (the review's finding with ``PROVIDER_PORTAL_PLAN_CHANGES=true``): a subscription with
    metered items gets the locked portal, and no plan with usage prices is offered in the other."""
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    started = flow.client.post("/subscription/intent", json={"price": flow.prices["basic"]}, headers=flow.headers)
    flow.pay(started.json["client_secret"])
    flow.deliver()
    subscription_id = started.json["subscription"]["id"]
    url = flow.client.post("/subscription/portal", json={}, headers=flow.headers).json["url"]
    assert portal_plan_changes(flow, url) is None, "metered items: the locked configuration"
    assert requests.post(f"{url}/subscriptions/{subscription_id}/swap", data={"price": flow.prices["pro"]},
                         timeout=10).status_code == 403
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert sorted(item.price.id for item in live["items"].data) == sorted([flow.prices["basic"],
                                                                          flow.prices["basic_usage"]])


def test_accepting_again_after_a_declined_seat_waits_for_that_invoice(team):
    """The declined seat's change is Stripe's pending update, kept although nobody joined: accepting again
    before its webhook is 409 ``payment_pending``, not a second open invoice for one seat (make test-cluster
    found two)."""
    subscription_id = team.subscribe()
    team.fail_card(subscription_id)
    team.person("cy")
    invitation = team.invite("cy")
    assert team.accept("cy", invitation).status_code == 402
    again = team.accept("cy", invitation)  # no webhook delivered in between
    assert again.status_code == 409 and again.json["error"]["code"] == "payment_pending", again.json
    open_invoices = team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id, "status": "open"}).data
    assert len(open_invoices) == 1 and team.members() == 1
