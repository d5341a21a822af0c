"""Metered prices in plans (issue 34 item 4): subscribing to a plan's licensed price adds the plan's
metered prices as items; a swap replaces them with the new plan's; the plan and seats stay the
licensed item's; a metered price is never sold alone."""
import pytest

from tests.test_billing_flow import start_flow
from tests.test_subscription_management import post, stored, subscribe


@pytest.fixture
def prices(stripe_client):
    product = stripe_client.v1.products.create(params={"name": "Service"})
    return {plan: stripe_client.v1.prices.create(params={
        "product": product.id, "unit_amount": amount, "currency": "usd", "recurring": {"interval": "month"},
        "lookup_key": plan}).id for plan, amount in (("basic", 900), ("pro", 2900))}


@pytest.fixture
def live_config(stripe_client, prices):
    """Each plan gets a metered price on one ``tokens`` meter (``basic`` 2, ``pro`` 1 per token)."""
    meter = stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})
    product = stripe_client.v1.prices.retrieve(prices["basic"]).product
    metered = {plan: stripe_client.v1.prices.create(params={
        "product": product, "unit_amount": amount, "currency": "usd",
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}}).id
        for plan, amount in (("basic", 2), ("pro", 1))}
    prices.update({f"{plan}_usage": price for plan, price in metered.items()})
    return {"PROVIDER_PLANS": {price: plan for plan, price in metered.items()}}


@pytest.fixture
def flow(live, emulator, stripe_client, prices):
    return start_flow(live, emulator, stripe_client, prices)


def item_prices(flow, subscription_id):
    return sorted(item.price.id for item in flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data)


def test_the_plans_metered_prices_follow_subscribe_and_swap(flow):
    prices = flow.prices
    listed = [plan["price"] for plan in flow.client.get("/plans").json["data"]]
    assert listed == [prices["basic"], prices["pro"]], "a metered price is not sold alone"
    refused = flow.client.post("/subscription/intent", json={"price": prices["basic_usage"]}, headers=flow.headers)
    assert (refused.status_code, refused.json["error"]["code"]) == (422, "unknown_price")

    subscription_id = subscribe(flow, "basic")
    assert item_prices(flow, subscription_id) == sorted([prices["basic"], prices["basic_usage"]])
    assert stored(flow, subscription_id) == (prices["basic"], 1, "active"), "the plan is the licensed item's"
    assert flow.me()["plan"] == "basic"

    preview = flow.client.get(f"/subscription/swap/preview?price={prices['pro']}", headers=flow.headers)
    assert preview.status_code == 200, preview.json
    post(flow, "/subscription/swap", {"price": prices["pro"]})
    flow.deliver()
    assert item_prices(flow, subscription_id) == sorted([prices["pro"], prices["pro_usage"]])
    assert stored(flow, subscription_id) == (prices["pro"], 1, "active")
    assert flow.me()["plan"] == "pro"
    post(flow, "/subscription/quantity", {"quantity": 3})
    flow.deliver()
    assert stored(flow, subscription_id) == (prices["pro"], 3, "active"), "seats are the licensed item's"
    assert item_prices(flow, subscription_id) == sorted([prices["pro"], prices["pro_usage"]])


def test_checkout_adds_the_plans_metered_prices(flow):
    from tests.test_selling import checkout, complete

    session = checkout(flow, "pro")
    complete(flow, session["id"])
    flow.deliver()
    subscription = flow.client.get("/subscription", headers=flow.headers).json["subscription"]
    assert item_prices(flow, subscription["id"]) == sorted([flow.prices["pro"], flow.prices["pro_usage"]])
    assert stored(flow, subscription["id"])[:2] == (flow.prices["pro"], 1)


def test_an_organizations_seats_follow_members_beside_the_plans_metered_item(flow):
    from tests.test_organization_billing import Team

    team = Team(flow)
    subscription_id = team.subscribe()
    assert item_prices(flow, subscription_id) == sorted([flow.prices["basic"], flow.prices["basic_usage"]])

    def seats():
        items = flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data
        return {item.price.id: item.to_dict().get("quantity") for item in items}

    team.join("bob")
    team.join("cy")
    assert seats() == {flow.prices["basic"]: 3, flow.prices["basic_usage"]: None} and team.members() == 3
    cy_id = team.client.get("/auth/me", headers=team.headers["cy"]).json["id"]
    assert team.client.delete(f"{team.base}/members/{cy_id}", headers=team.headers["cy"]).status_code == 204
    assert seats() == {flow.prices["basic"]: 2, flow.prices["basic_usage"]: None}

    licensed = next(i for i in flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data
                    if i.price.id == flow.prices["basic"])
    flow.stripe.v1.subscriptions.update(subscription_id, params={
        "items": [{"id": licensed.id, "quantity": 5}], "proration_behavior": "none"})
    flow.deliver()
    fixed = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert f"{team.org} (Acme): seats 5 -> 2" in fixed.output, fixed.output
    assert seats() == {flow.prices["basic"]: 2, flow.prices["basic_usage"]: None}
