"""Money safety at the edges (issue 31, CONTRACT "Changes to the fourth round"): each finding of the
round-4 review reproduced through HTTP and the emulator, now gaining nothing.

Stripe's hosted pages (Checkout, the billing portal) keep the service's rules; the records that
stop a second discount or trial outlive the account; nothing stays collectable after a cancel; a
request's Stripe calls are bounded whatever the user's history. The live service against the
emulator through the real SDK, as tests/test_billing_flow.py.
"""
import pytest
import requests
import stripe

from app.billing.call_costs import PROVIDER_CALL_COSTS
from tests.support.accounts import PASSWORD
from tests.support.billing import (
    another_user,
    code_refused,
    measured,
    portal_plan_changes,
    post,
    settle,
    stripe_requests,
    subscribe,
)
from tests.support.organizations import Team
from tests.support.selling import URLS, checkout, promotion


def intent(flow, plan="basic", code=None, expect=201):
    body = {"price": flow.prices[plan], **({"promotion_code": code} if code else {})}
    response = flow.client.post("/subscription/intent", json=body, headers=flow.headers)
    assert response.status_code == expect, response.json
    return response.json


# -- Checkout: no code box of Stripe's own ----------------------------------------------------------

def test_checkout_offers_no_code_box_so_a_refused_code_cannot_be_typed_on_stripes_page(flow):
    promotion(flow, "ONCE", percent_off=50, duration="once")
    session = checkout(flow)
    live = flow.stripe.v1.checkout.sessions.retrieve(session["id"])
    assert not live.allow_promotion_codes and not live.discounts
    assert 'name="promotion_code"' not in requests.get(session["url"], timeout=10).text
    typed = requests.post(f"{flow.emulator.url}/_emulator/checkout_sessions/{session['id']}/complete",
                          json={"payment_method": "pm_card_visa", "promotion_code": "ONCE"}, timeout=10)
    assert typed.status_code == 200, typed.text
    assert not flow.stripe.v1.subscriptions.retrieve(typed.json()["subscription"]).discounts, "typed by hand: nothing"


# -- the billing portal runs under the service's configuration --------------------------------------


def test_the_portal_offers_no_plan_change_by_default(flow):
    subscription_id = subscribe(flow)
    url = post(flow, "/subscription/portal").json["url"]
    assert portal_plan_changes(flow, url) is None
    page = requests.get(url, timeout=10).text
    assert "Cancel at period end" in page and "Cancel now" not in page
    swap = requests.post(f"{url}/subscriptions/{subscription_id}/swap", data={"price": flow.prices["pro"]},
                         timeout=10)
    assert swap.status_code == 403
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live["items"].data[0].price.id == flow.prices["basic"], "the upgrade that cost nothing is gone"


def test_a_portal_upgrade_is_invoiced_at_once_and_offers_only_the_services_prices(flow, configure):
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    stray = flow.stripe.v1.prices.create(params={"unit_amount": 1, "currency": "usd",
                                                 "recurring": {"interval": "month"},
                                                 "product_data": {"name": "Not sold here"}})
    subscription_id = subscribe(flow)
    url = post(flow, "/subscription/portal").json["url"]
    offered = [price for prices in portal_plan_changes(flow, url).values() for price in prices]
    assert flow.prices["pro"] in offered and stray.id not in offered
    assert requests.post(f"{url}/subscriptions/{subscription_id}/swap", data={"price": stray.id},
                         timeout=10).status_code == 403
    before = flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice
    assert requests.post(f"{url}/subscriptions/{subscription_id}/swap", data={"price": flow.prices["pro"]},
                         timeout=10).status_code == 200
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id, params={"expand": ["latest_invoice"]})
    assert live.latest_invoice.id != before and live.latest_invoice.billing_reason == "subscription_update"
    assert live.latest_invoice.amount_paid > 0, "the upgrade's prorated time is charged now, not never"
    configs = [c.to_dict() for c in flow.stripe.v1.billing_portal.configurations.list(params={"active": True}).data]
    ours = [c for c in configs if c["metadata"].get("managed_by") == "subscription-service"]
    assert [c["metadata"]["variant"] for c in ours] == ["plan_changes"]
    update = ours[0]["features"]["subscription_update"]
    assert update["proration_behavior"] == "always_invoice" and update["default_allowed_updates"] == ["price"]
    assert not any(p["adjustable_quantity"]["enabled"] for p in update["products"]), "seats are the service's"


def test_a_subscription_in_dunning_gets_the_portal_without_plan_changes(flow, configure):
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    subscription_id = subscribe(flow)
    flow.emulator.fail_next_renewal(subscription_id)
    end = flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end
    flow.emulator.advance(end - flow.emulator.clock() + 1)
    settle(flow)
    assert flow.me()["subscription"]["status"] == "past_due"
    url = post(flow, "/subscription/portal").json["url"]
    assert portal_plan_changes(flow, url) is None, "dunning: the locked configuration"
    assert requests.post(f"{url}/subscriptions/{subscription_id}/swap", data={"price": flow.prices["pro"]},
                         timeout=10).status_code == 403


def test_the_portal_return_url_is_held_to_the_allowed_hosts(flow):
    response = flow.client.post("/subscription/portal", json={"return_url": "https://evil.example/phish"},
                                headers=flow.headers)
    assert response.status_code == 422 and list(response.json["error"]["details"]) == ["return_url"]


# -- records outlive the account ------------------------------------------------------------------

def test_a_once_code_is_once_per_address_even_after_the_account_is_deleted(flow):
    promotion(flow, "ONCE", percent_off=50, duration="once")
    started = intent(flow, code="ONCE")
    flow.pay(started["client_secret"])
    settle(flow)
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    again = another_user(flow, "ada@example.com")
    assert code_refused(again.client.post("/subscription/intent", json={
        "price": again.prices["basic"], "promotion_code": "ONCE"}, headers=again.headers))
    assert code_refused(again.client.post("/subscription/checkout", json={
        "price": again.prices["basic"], "promotion_code": "ONCE", **URLS}, headers=again.headers))


def test_a_deleted_accounts_earlier_address_gets_no_second_trial(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=14)
    assert intent(flow)["subscription"]["status"] == "trialing"
    post(flow, "/auth/email/change", {"email": "ada@new.example", "password": PASSWORD}, expect=202)
    with flow.app.app_context():  # the move, as the verified link makes it (the mail is another test's)
        from app.auth import recovery
        from app.extensions import db
        from app.models import User
        recovery._move_email(db.session.scalars(db.select(User)).one(), "ada@new.example")
        db.session.commit()
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    back = another_user(flow, "ada@example.com")
    assert intent(back)["subscription"]["status"] == "incomplete", "the address it left had its trial too"


# -- restrictions checked before any change, and in the emulator ------------------------------------

def test_code_restrictions_are_refused_before_any_change(flow):
    flow.stripe.v1.promotion_codes.create(params={
        "promotion": {"type": "coupon", "coupon": flow.stripe.v1.coupons.create(
            params={"percent_off": 50, "duration": "forever"}).id},
        "code": "FIRST", "restrictions": {"first_time_transaction": True}})
    flow.stripe.v1.promotion_codes.create(params={
        "promotion": {"type": "coupon", "coupon": flow.stripe.v1.coupons.create(
            params={"percent_off": 50, "duration": "forever"}).id},
        "code": "BIG", "restrictions": {"minimum_amount": 100_000, "minimum_amount_currency": "usd"}})
    capped = flow.stripe.v1.coupons.create(params={"percent_off": 50, "duration": "forever", "max_redemptions": 1})
    for code in ("CAP1", "CAP2"):
        flow.stripe.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": capped.id},
                                                      "code": code})
    assert code_refused(flow.client.post("/subscription/intent", json={
        "price": flow.prices["basic"], "promotion_code": "BIG"}, headers=flow.headers))
    started = intent(flow, code="CAP1")
    flow.pay(started["client_secret"])
    settle(flow)
    other = another_user(flow, "bo@example.com")
    assert code_refused(other.client.post("/subscription/intent", json={
        "price": other.prices["basic"], "promotion_code": "CAP2"}, headers=other.headers)), \
        "the coupon's max_redemptions holds across its codes"
    first = post(flow, "/subscription/swap", {"price": flow.prices["pro"], "promotion_code": "FIRST"}, expect=422)
    assert first.json["error"]["code"] == "invalid_promotion_code", "the customer has paid before"
    customer = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"]).customer
    with pytest.raises(stripe.InvalidRequestError, match="prior transactions"):
        flow.stripe.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                    "customer": customer, "items": [{"price": flow.prices["pro"]}],
                                                    "discounts": [{"promotion_code": _code_id(flow, "FIRST")}]})
    with pytest.raises(stripe.InvalidRequestError, match="minimum"):
        flow.stripe.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                    "customer": customer, "items": [{"price": flow.prices["pro"]}],
                                                    "discounts": [{"promotion_code": _code_id(flow, "BIG")}]})
    assert len(flow.stripe.v1.subscriptions.list(params={"customer": customer, "status": "all"}).data) == 1, \
        "a refused code leaves no subscription behind at Stripe"


def _code_id(flow, code):
    return flow.stripe.v1.promotion_codes.list(params={"code": code}).data[0].id


# -- nothing collectable after a cancel -------------------------------------------------------------

def test_a_replaced_intents_client_secret_pays_nothing(flow):
    first = intent(flow, "basic")
    second = intent(flow, "pro")
    assert second["subscription"]["id"] != first["subscription"]["id"]
    with pytest.raises(stripe.InvalidRequestError, match="canceled"):
        flow.pay(first["client_secret"])
    old = flow.stripe.v1.subscriptions.retrieve(first["subscription"]["id"], params={"expand": ["latest_invoice"]})
    assert old.status == "canceled" and old.latest_invoice.status == "void" and old.latest_invoice.amount_paid == 0


def test_a_deleted_accounts_open_payment_pays_nothing(flow):
    started = intent(flow, "pro")
    customer = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"]).customer
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    with pytest.raises(stripe.InvalidRequestError, match="canceled"):
        flow.pay(started["client_secret"])
    paid = flow.stripe.v1.invoices.list(params={"customer": customer, "status": "paid"}).data
    assert paid == [], "nothing was taken from the deleted customer"


# -- bounded Stripe work ----------------------------------------------------------------------------

def test_an_intents_stripe_calls_do_not_grow_with_history(flow, configure):
    configure(PROVIDER_CALLS_RATE_LIMIT="10000 per minute")
    counts = []
    for round_ in range(12):
        before = stripe_requests(flow)
        intent(flow, ("basic", "pro")[round_ % 2])
        counts.append(stripe_requests(flow) - before)
    assert max(counts[2:]) == min(counts[2:]), counts
    assert max(counts) <= PROVIDER_CALL_COSTS["subscription.intent"], counts


def test_a_payment_attempts_stripe_calls_are_within_its_cost_when_it_replaces_both_kinds(flow, configure):
    """The dearest intent and Checkout: a promotion code, and both an intent's unpaid subscription and an open
    Checkout page (one made at Stripe directly, as the dashboard would) to close first."""
    configure(PROVIDER_CALLS_RATE_LIMIT="10000 per minute")
    for code in ("TEAM10", "TEAM15"):
        promotion(flow, code, percent_off=10, duration="forever")
    counts = {}
    for endpoint, replace in (("subscription.intent", lambda: intent(flow, "pro", "TEAM10")),
                              ("subscription.checkout", lambda: checkout(flow, "pro", promotion_code="TEAM15"))):
        unpaid = intent(flow, "basic")["subscription"]["id"]
        customer = flow.stripe.v1.subscriptions.retrieve(unpaid).customer
        flow.stripe.v1.checkout.sessions.create(params={
            "mode": "subscription", "customer": customer, "line_items": [{"price": flow.prices["basic"]}],
            "success_url": URLS["success_url"], "subscription_data": {"billing_mode": {"type": "classic"}}})
        before = stripe_requests(flow)
        made = replace()
        counts[endpoint] = stripe_requests(flow) - before
        # Both kinds closed: the intent's unpaid subscription and the dashboard's page; a Checkout leaves its own.
        still_open = [s.id for s in flow.stripe.v1.checkout.sessions.list(params={"customer": customer,
                                                                                    "status": "open"}).data]
        assert still_open == ([made["id"]] if endpoint == "subscription.checkout" else []), (endpoint, still_open)
        assert flow.stripe.v1.subscriptions.retrieve(unpaid).status in ("canceled", "incomplete_expired"), endpoint
    assert all(count <= PROVIDER_CALL_COSTS[endpoint] for endpoint, count in counts.items()), counts


def test_an_organizations_member_and_deletion_requests_cost_at_most_what_the_limit_counts(flow, configure):
    """Accepting (its first payment open, or a seat charged), removing a member and deleting the organisation
    call Stripe a bounded number of times, at most their ``PROVIDER_CALL_COSTS`` entry."""
    configure(PROVIDER_CALLS_RATE_LIMIT="10000 per minute")
    waiting = Team(flow)
    opened = waiting.client.post(f"{waiting.base}/subscription/checkout",
                                 json={"price": flow.prices["basic"], **URLS}, headers=waiting.ada)
    assert opened.status_code == 201, opened.json
    waiting.person("cy")
    held = measured(flow, lambda: waiting.accept("cy", waiting.invite("cy")))
    team = Team(flow)
    team.subscribe()
    for _ in range(3):  # history the requests must not read: subscriptions cancelled and started again
        assert team.client.post(f"{team.base}/subscription/cancel", json={"at_period_end": False},
                                headers=team.ada).status_code == 200
        team.subscribe()
    team.person("bob")
    invitation = team.invite("bob")
    accepted = measured(flow, lambda: team.accept("bob", invitation))
    bob = team.client.get("/auth/me", headers=team.headers["bob"]).json["id"]
    removed = measured(flow, lambda: team.client.delete(f"{team.base}/members/{bob}", headers=team.ada))
    deleted = measured(flow, lambda: team.client.delete(team.base, json={"password": PASSWORD}, headers=team.ada))
    assert [held[0], accepted[0], removed[0], deleted[0]] == [409, 200, 204, 204]
    assert max(held[1], accepted[1]) <= PROVIDER_CALL_COSTS["organizations.accept"], (held, accepted)
    assert removed[1] <= PROVIDER_CALL_COSTS["organizations.remove"], removed
    assert deleted[1] <= PROVIDER_CALL_COSTS["organizations.delete"], deleted


def test_the_call_limit_counts_each_endpoints_stripe_calls(flow, configure):
    configure(PROVIDER_CALLS_RATE_LIMIT=f"{PROVIDER_CALL_COSTS['subscription.intent'] * 2} per minute")
    intent(flow)
    intent(flow, "pro")
    refused = flow.client.post("/subscription/portal", json={}, headers=flow.headers)
    assert refused.status_code == 429 and refused.headers["Retry-After"]


# -- proration_date only from a preview -------------------------------------------------------------

def test_a_proration_date_no_preview_issued_is_refused(flow):
    subscribe(flow, "pro")
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['basic']}", headers=flow.headers).json
    backdated = post(flow, "/subscription/swap", {"price": flow.prices["basic"],
                                                  "proration_date": preview["proration_date"] - 60}, expect=422)
    assert list(backdated.json["error"]["details"]) == ["proration_date"]
    post(flow, "/subscription/swap", {"price": flow.prices["basic"], "proration_date": preview["proration_date"]})
