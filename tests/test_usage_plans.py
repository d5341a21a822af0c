"""Metered prices in plans (issue 34 item 4): subscribing to a plan's licensed price adds the plan's
metered prices as items; a swap replaces them with the new plan's; the plan and seats stay the
licensed item's; a metered price is never sold alone."""


from tests.support.accounts import PASSWORD
from tests.support.billing import post, stored, subscribe, updates, use_card
from tests.support.selling import checkout, complete
from tests.support.usage import event, live_config, prices  # noqa: F401 (fixtures: the plans and their metered prices)


def item_prices(flow, subscription_id):
    return sorted(item.price.id for item in flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data)


def test_the_plans_metered_prices_follow_subscribe_and_swap(flow):
    prices = flow.prices  # noqa: F811 (prices: the fixture imported above)
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
    session = checkout(flow, "pro")
    complete(flow, session["id"])
    flow.deliver()
    subscription = flow.client.get("/subscription", headers=flow.headers).json["subscription"]
    assert item_prices(flow, subscription["id"]) == sorted([flow.prices["pro"], flow.prices["pro_usage"]])
    assert stored(flow, subscription["id"])[:2] == (flow.prices["pro"], 1)


def test_a_swap_that_moves_metered_prices_changes_all_or_nothing(flow):
    """A pending update takes an item's price and quantity, no deleted item
    (https://docs.stripe.com/billing/subscriptions/pending-updates-reference): the swap moves the plan's
    metered items in the same update, ``error_if_incomplete``, so a declined charge changes nothing."""
    prices = flow.prices  # noqa: F811 (prices: the fixture imported above)
    subscription_id = subscribe(flow, "basic")
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    refused = post(flow, "/subscription/swap", {"price": prices["pro"]}, expect=402).json["error"]
    assert refused["code"] == "payment_required" and refused["details"]["client_secret"] is None
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live.pending_update is None, "nothing waits: the change was refused whole"
    assert item_prices(flow, subscription_id) == sorted([prices["basic"], prices["basic_usage"]])
    use_card(flow, subscription_id, "pm_card_visa")
    before = updates(flow)
    post(flow, "/subscription/swap", {"price": prices["pro"]})
    assert updates(flow) == before + 1, "the plan and its usage prices move in one update"
    assert item_prices(flow, subscription_id) == sorted([prices["pro"], prices["pro_usage"]])
    flow.deliver()
    assert stored(flow, subscription_id) == (prices["pro"], 1, "active") and flow.me()["plan"] == "pro"


def test_cancel_now_bills_the_usage_of_the_period_so_far(flow):
    """Stripe bills a metered item's usage of a period cut short only with ``invoice_now``
    (https://docs.stripe.com/api/subscriptions/cancel), which the service sends for an active subscription."""
    subscription_id = subscribe(flow, "basic")
    runner = flow.app.test_cli_runner()
    key = runner.invoke(args=["create-service-key", "backend"]).output.strip().splitlines()[-1]
    user_id = flow.me()["id"]
    batch = {"events": [event(user_id, f"cancel-{n}", value) for n, value in enumerate((30, 12))]}
    accepted = flow.client.post("/usage/events", json=batch, headers={"Authorization": f"Bearer {key}"})
    assert accepted.json == {"accepted": 2, "duplicates": 0}
    assert "delivered 2" in runner.invoke(args=["deliver-usage", "--once"]).output
    post(flow, "/subscription/cancel", {"at_period_end": False})
    final = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data[0]
    usage = [(line.quantity, line.amount) for line in final.lines.data
             if line.pricing.price_details.price == flow.prices["basic_usage"]]
    assert usage == [(42, 42 * 2)], "the usage reported until the cancellation, billed once"
    flow.deliver()
    assert flow.me()["plan"] == "free"


def report(flow, *values, prefix="usage"):
    """Report ``values`` as the client app's backend does (a service key); return the CLI runner."""
    runner = flow.app.test_cli_runner()
    key = runner.invoke(args=["create-service-key", "backend"]).output.strip().splitlines()[-1]
    batch = {"events": [event(flow.me()["id"], f"{prefix}-{n}", value) for n, value in enumerate(values)]}
    accepted = flow.client.post("/usage/events", json=batch, headers={"Authorization": f"Bearer {key}"})
    assert accepted.json == {"accepted": len(values), "duplicates": 0}
    return runner


def test_deleting_the_account_bills_the_usage_of_the_period_so_far(flow):
    """As ``POST /subscription/cancel`` now does (``invoice_now``): deleting the account is no way to use 42
    metered tokens and never pay for them."""
    subscription_id = subscribe(flow, "basic")
    runner = report(flow, 30, 12, prefix="gone")
    assert "delivered 2" in runner.invoke(args=["deliver-usage", "--once"]).output
    gone = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert gone.status_code == 204, gone.json
    invoices = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    usage = [(line.quantity, line.amount) for invoice in invoices for line in invoice.lines.data
             if line.pricing.price_details.price == flow.prices["basic_usage"]]
    assert usage == [(42, 42 * 2)], usage


def test_usage_not_yet_delivered_when_the_account_is_deleted_is_billed_on_its_final_invoice(flow):
    """Forty tokens answered 202 just before the account is deleted: delivered to Stripe's meter (same
    identifiers) before the cancel with ``invoice_now``, so the final invoice bills them; the worker then
    has nothing left to send (CONTRACT "Changes to the fifth round")."""
    subscription_id = subscribe(flow, "basic")
    runner = report(flow, 25, 15, prefix="late")
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    invoices = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    usage = [(line.quantity, line.amount) for invoice in invoices for line in invoice.lines.data
             if line.pricing.price_details.price == flow.prices["basic_usage"]]
    assert usage == [(40, 40 * 2)], usage
    assert sorted(event["identifier"] for event in flow.emulator.store.meter_events) == ["late-0", "late-1"]
    before = flow.emulator.control("GET", "requests")["total"]
    assert "delivered 0, failed 0" in runner.invoke(args=["deliver-usage", "--once"]).output
    assert flow.emulator.control("GET", "requests")["total"] == before
    assert runner.invoke(args=["usage-events", "--failed", "--json"]).output == "[]\n"
