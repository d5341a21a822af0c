"""Money safety of the billing endpoints (issue 25): the client never decides what it pays.

Through the real stripe SDK to the emulator, as tests/test_subscription_management.py. The
invariants a hostile client with a valid token must not break: after any sequence of swaps and
seat changes up and down, with any ``proration_date`` it may send, the customer's credit at Stripe
never exceeds what it paid; an upgrade is charged at least its preview; a declined upgrade stays
declined through any retry (tests/test_subscription_management.py).
"""
import time
import uuid

import pytest
import requests
import stripe
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from app.billing import trials
from app.billing.provider import get_provider
from app.errors import AlreadySubscribed
from app.extensions import db
from app.models import IdempotencyKey, Subscription, User
from app.subscription import service
from tests.depth import budget
from tests.support.accounts import PASSWORD, bearer, login, register
from tests.support.billing import (
    Flow,
    post,
    prices,  # noqa: F401 (a fixture: the five monthly prices, basic 9.00 to max 99.00 USD)
    subscribe,
    updates,
)
from tests.support.selling import checkout, complete, promotion


def paid_and_credit(flow, customer):
    """``(what the customer paid, the credit waiting for them)`` at Stripe, in minor units.

    The credit is the customer's balance (negative: owed to them) plus the prorations waiting for the
    next invoice, when they add up below zero: what the renewal would subtract from its price.
    """
    invoices = flow.stripe.v1.invoices.list(params={"customer": customer, "limit": 100}).data
    paid = sum(invoice.amount_paid for invoice in invoices)
    balance = flow.stripe.v1.customers.retrieve(customer).balance
    subscription = flow.stripe.v1.subscriptions.list(params={"customer": customer}).data[0]
    upcoming = flow.stripe.v1.invoices.create_preview(params={"subscription": subscription.id})
    waiting = sum(line.amount for line in upcoming.lines.data if line.parent.subscription_item_details.proration)
    return paid, -min(balance, 0) - min(waiting, 0)


def test_a_proration_date_is_a_recent_previews_only(flow):
    subscribe(flow)
    now = int(time.time())
    before = updates(flow)
    for sent in (now - 601, now + 60, now + 40 * 86400, 1, 0):
        refused = post(flow, "/subscription/swap", {"price": flow.prices["pro"], "proration_date": sent},
                       expect=422).json["error"]
        assert refused["code"] == "validation_error" and list(refused["details"]) == ["proration_date"], sent
    assert updates(flow) == before, "refused before Stripe is asked"
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}", headers=flow.headers).json
    assert abs(shown["proration_date"] - now) <= 5, "the preview's own date: now"
    post(flow, "/subscription/swap", {"price": flow.prices["pro"], "proration_date": shown["proration_date"]})


def test_the_exploit_of_the_review_pays_in_full(flow):
    """$9 -> $49 dated at the period's end (charged 0), back dated at its start; 10,000 seats with no
    proration, then 1: the next invoice stood at -$90,021.93. Now each upgrade is charged at once."""
    subscription_id = subscribe(flow)
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    up = post(flow, "/subscription/swap", {"price": flow.prices["team"]}).json["subscription"]
    assert up["plan"] == "team"
    post(flow, "/subscription/swap", {"price": flow.prices["basic"]})
    post(flow, "/subscription/quantity", {"quantity": 10_000})
    post(flow, "/subscription/quantity", {"quantity": 1})
    paid, credit = paid_and_credit(flow, customer)
    assert credit <= paid, (paid, credit)
    assert paid > 900 + 10_000 * 900 // 2, "the seats were charged for the time they were held"


def test_an_upgrade_is_charged_at_least_its_preview(flow):
    subscription_id = subscribe(flow)
    post(flow, "/subscription/quantity", {"quantity": 3})  # an earlier seat change: the stale-date trap
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['team']}", headers=flow.headers).json
    assert all(line["period_start"] == shown["proration_date"] for line in shown["lines"]), \
        "the preview is dated now, not at the seat change"
    post(flow, "/subscription/swap", {"price": flow.prices["team"], "proration_date": shown["proration_date"]})
    invoice = flow.stripe.v1.invoices.retrieve(flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice)
    assert invoice.amount_paid == shown["amount_due"] > 0


def test_a_cheaper_price_is_previewed_as_the_next_invoice_with_its_credit(flow):
    subscribe(flow, plan="team")
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['basic']}", headers=flow.headers).json
    amounts = [line["amount"] for line in shown["lines"]]
    assert amounts[0] < 0 and amounts[-1] == 900 and shown["amount_due"] == max(0, sum(amounts))


def test_a_price_in_another_currency_or_unknown_to_stripe_is_refused_before_any_change(flow, stripe_client, configure):
    product = stripe_client.v1.products.create(params={"name": "Euro"})
    euro = stripe_client.v1.prices.create(params={"product": product.id, "unit_amount": 900, "currency": "eur",
                                                  "recurring": {"interval": "month"}}).id
    with flow.app.app_context():
        configure(PROVIDER_PLANS={**flow.app.config["PROVIDER_PLANS"], euro: "euro", "price_gone": "gone"})
    subscribe(flow)
    before = updates(flow)
    for price in (euro, "price_gone"):
        refused = post(flow, "/subscription/swap", {"price": price}, expect=422).json["error"]
        assert refused["code"] == "unknown_price" and refused["details"] == {"price": price}
        preview = flow.client.get(f"/subscription/swap/preview?price={price}", headers=flow.headers)
        assert preview.status_code == 422 and preview.json["error"]["code"] == "unknown_price"
    assert updates(flow) == before


CHANGES = st.lists(st.tuples(st.sampled_from(["basic", "pro", "team", "max", 1, 2, 5, 40]),
                             st.sampled_from([None, -599, -1, 0, 1, 3600, -30 * 86400])), min_size=1, max_size=6)


@settings(max_examples=budget(4, 25), deadline=None, suppress_health_check=list(HealthCheck))
@given(changes=CHANGES)
def test_no_sequence_of_changes_earns_more_credit_than_was_paid(live, emulator, stripe_client, prices, changes):  # noqa: F811 (prices: the fixture imported above)
    app, base_url = live
    email = f"{uuid.uuid4().hex}@example.com"  # one user per example, on the same service
    client = app.test_client()
    register(client, email=email)
    emulator.pause_delivery()
    flow = Flow(app, base_url, client, bearer(login(client, email=email)), emulator, stripe_client, prices)
    subscription_id = subscribe(flow)
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    for target, offset in changes:
        body = {"price": flow.prices[target]} if isinstance(target, str) else {"quantity": target}
        if offset is not None:
            body["proration_date"] = int(time.time()) + offset
        path = "/subscription/swap" if "price" in body else "/subscription/quantity"
        answer = flow.client.post(path, json=body, headers=flow.headers)
        assert answer.status_code in (200, 422), answer.json
    paid, credit = paid_and_credit(flow, customer)
    assert credit <= paid, (changes, paid, credit)


def test_a_stored_answer_holds_no_client_secret_and_replays_it(flow):
    """Issue 25 item 7: a client secret or portal URL kept 24 hours in plain text."""
    first = post(flow, "/subscription/intent", {"price": flow.prices["basic"]}, key="intent-1", expect=201).json
    portal = post(flow, "/subscription/portal", key="portal-1").json
    again = post(flow, "/subscription/intent", {"price": flow.prices["basic"]}, key="intent-1", expect=201)
    assert again.headers["Idempotent-Replayed"] == "true" and again.json == first
    assert post(flow, "/subscription/portal", key="portal-1").json == portal
    with flow.app.app_context():
        bodies = db.session.scalars(select(IdempotencyKey.body)).all()
    assert len(bodies) == 2
    for body in bodies:
        assert "_secret_" not in body and "http" not in body and first["client_secret"] not in body


@pytest.mark.parametrize("key, status", [("é-key", 400), ("ключ", 400), ("key\u00a0x", 400), ("ok-key_1", 201)])
def test_an_idempotency_key_is_printable_ascii(flow, key, status):
    headers = {**flow.headers, "Idempotency-Key": key.encode().decode("latin-1")}
    answer = flow.client.post("/subscription/intent", json={"price": flow.prices["basic"]}, headers=headers)
    assert answer.status_code == status, answer.json
    if status == 400:
        assert answer.json["error"]["code"] == "invalid_idempotency_key" and "ASCII" in answer.json["error"]["message"]


def test_accounts_are_limited_per_client(make_app):
    client = make_app(AUTH_REGISTER_RATE_LIMIT="3 per hour").test_client()
    for n in range(3):
        register(client, email=f"user{n}@example.com")
    refused = client.post("/auth/register", json={"email": "user9@example.com", "password": "x" * 12, "name": "X"})
    assert refused.status_code == 429 and refused.json["error"]["code"] == "rate_limited"
    assert int(refused.headers["Retry-After"]) >= 1
    other = client.post("/auth/register", json={"email": "user9@example.com", "password": PASSWORD,
                                                "name": "X"}, environ_base={"REMOTE_ADDR": "10.0.0.2"})
    assert other.status_code == 201, "another client has its own limit"


def test_a_promotion_code_is_one_use_per_user(flow):
    """Review finding: a ``once`` code sent with every upgrade (and a downgrade before each renewal)
    held the $99 plan for $9 a month. A code a subscription of the user carried is refused after."""
    subscribe(flow)
    promotion(flow, "UPGRADE", percent_off=100, duration="once")
    post(flow, "/subscription/swap", {"price": flow.prices["max"], "promotion_code": "UPGRADE"})
    flow.deliver()
    post(flow, "/subscription/swap", {"price": flow.prices["basic"]})
    before = updates(flow)
    for path in ("/subscription/swap", "/subscription/swap/preview"):
        body = {"price": flow.prices["max"], "promotion_code": "UPGRADE"}
        answer = (flow.client.post(path, json=body, headers=flow.headers) if path.endswith("swap") else
                  flow.client.get(path, query_string=body, headers=flow.headers))
        assert answer.status_code == 422, (path, answer.json)
        assert answer.json["error"]["code"] == "invalid_promotion_code" and "already" in answer.json["error"]["message"]
    assert updates(flow) == before and flow.me()["plan"] == "basic"


def waiting_credit(flow, subscription_id):
    """The credit (minor units, >= 0) a cancel now left waiting for the customer's next invoice: the emulator
    keeps Stripe's pending proration items on the subscription; a missing record is a KeyError, not 0."""
    lines = flow.emulator.store.subscriptions[subscription_id]["_pending_prorations"]
    return -sum(line["amount"] for line in lines if line["amount"] < 0)


def test_cancelling_now_in_dunning_credits_no_unpaid_time(flow):
    """Review finding: the unused time of a period whose invoice is unpaid was credited. The same probe first
    sees the credit of a paid period cancelled now, so it cannot pass by seeing nothing."""
    paid = subscribe(flow, "max")
    flow.emulator.advance(10 * 86400)
    assert post(flow, "/subscription/cancel", {"at_period_end": False}).json["subscription"]["status"] == "canceled"
    flow.deliver()
    assert waiting_credit(flow, paid) > 0, "a paid period's unused time is credited"
    subscription_id = subscribe(flow, "max")
    flow.emulator.fail_next_renewal(subscription_id)
    flow.emulator.advance(31 * 86400)
    flow.deliver()
    assert flow.me()["subscription"]["status"] == "past_due"
    assert post(flow, "/subscription/cancel", {"at_period_end": False}).json["subscription"]["status"] == "canceled"
    assert waiting_credit(flow, subscription_id) == 0, "no credit for a period never paid"


def live_subscriptions(flow):
    """The statuses of the account's subscriptions at Stripe that bill or may yet bill, sorted."""
    return sorted(s.status for s in flow.stripe.v1.subscriptions.list(params={"limit": 10}).data
                  if s.status in ("active", "trialing", "past_due", "incomplete"))


def paid_late(flow, session_id):
    """Try to pay a Checkout page the service has since replaced: Stripe's answer (an error when expired)."""
    return requests.post(f"{flow.emulator.url}/_emulator/checkout_sessions/{session_id}/complete",
                         json={"payment_method": "pm_card_mastercard"}, timeout=10)


def test_a_second_checkout_page_expires_the_first_so_one_trial_is_paid(flow, configure):
    """Review finding: each of two sessions made before either completed carried the first
    subscription's trial (the second to complete was charged at once); attack finding: both pages
    could be paid, two subscriptions billing one account. The newer page is the one payment attempt."""
    configure(PROVIDER_TRIAL_DAYS=14)
    first = checkout(flow)
    second = checkout(flow, success_url="http://localhost:3000/welcome?again=1")
    assert flow.stripe.v1.checkout.sessions.retrieve(first["id"]).status == "expired"
    late = paid_late(flow, first["id"])
    assert late.status_code == 400 and "expired" in late.text
    complete(flow, second["id"], "pm_card_visa")
    flow.deliver()
    assert live_subscriptions(flow) == ["trialing"]


def test_the_same_checkout_again_gets_the_same_open_page(flow):
    first = checkout(flow)
    assert checkout(flow) == first
    assert flow.stripe.v1.checkout.sessions.retrieve(first["id"]).status == "open"


def test_an_intents_unpaid_subscription_and_a_checkout_page_are_one_payment_attempt(flow):
    """Attack finding: an intent's client secret kept by the client, then a Checkout page: both could be paid."""
    started = flow.intent()
    session = checkout(flow)
    replaced = flow.stripe.v1.subscriptions.retrieve(started["subscription"]["id"],
                                                     params={"expand": ["latest_invoice"]})
    assert (replaced.status, replaced.latest_invoice.status) == ("canceled", "void")
    with pytest.raises(stripe.InvalidRequestError, match="canceled"):
        flow.pay(started["client_secret"])
    complete(flow, session["id"])
    flow.deliver()
    assert live_subscriptions(flow) == ["active"]


def test_an_intent_expires_the_open_checkout_page(flow):
    session = checkout(flow)
    started = flow.intent()
    assert flow.stripe.v1.checkout.sessions.retrieve(session["id"]).status == "expired"
    assert paid_late(flow, session["id"]).status_code == 400
    flow.pay(started["client_secret"])
    flow.deliver()
    assert live_subscriptions(flow) == ["active"]


def test_a_page_paid_while_being_replaced_is_already_subscribed(flow):
    """The customer pays the page after the service read it as open: Stripe refuses to expire it, and the
    account has its subscription, so no second payment attempt is started."""
    session = checkout(flow)
    read_while_open = [s.to_dict() for s in flow.stripe.v1.checkout.sessions.list(params={"limit": 1}).data]
    complete(flow, session["id"])

    class ReadBeforeThePayment:
        def __init__(self, provider):
            self.provider = provider

        def list_checkout_sessions(self, customer_id, limit, status=None):
            return read_while_open

        def __getattr__(self, name):
            return getattr(self.provider, name)

    with flow.app.app_context():
        user = db.session.scalar(select(User).where(User.id == flow.me()["id"]))
        with pytest.raises(AlreadySubscribed):
            service._close_checkout_sessions(user, ReadBeforeThePayment(get_provider()))
        assert [s.provider_status for s in user.subscriptions] == ["active"], "written as sync writes it"


@pytest.mark.parametrize("again", ["intent", "checkout"])
def test_a_page_paid_before_its_webhook_arrived_starts_no_second_attempt(flow, again):
    """The page is paid and the next request comes before Stripe's webhook: Stripe's answer is read, not waited for."""
    complete(flow, checkout(flow)["id"])
    if again == "intent":
        assert flow.intent(expect=409)["error"]["code"] == "already_subscribed"
    else:
        assert checkout(flow, "pro", expect=409)["error"]["code"] == "already_subscribed"
    flow.deliver()
    assert live_subscriptions(flow) == ["active"]
    assert flow.me()["plan"] == "basic"


def test_a_promotion_code_is_redeemed_once_through_two_checkout_pages(flow):
    """Attack finding: two open pages each carrying the code, both paid, two discounted subscriptions."""
    promotion(flow)
    first = checkout(flow, promotion_code="LAUNCH20")
    second = checkout(flow, promotion_code="LAUNCH20", success_url="http://localhost:3000/welcome?again=1")
    assert paid_late(flow, first["id"]).status_code == 400
    complete(flow, second["id"])
    flow.deliver()
    discounted = [s.id for s in flow.stripe.v1.subscriptions.list(params={"limit": 10}).data
                  if s.status == "active" and s.discounts]
    assert len(discounted) == 1, discounted


def test_a_method_without_a_fingerprint_counts_as_one_that_had_a_trial(app):
    """Review finding: a Link wallet (no ``card.fingerprint``) earned a trial per account. The emulator
    saves cards only, so a provider answering a Link method stands in for Stripe here."""

    class LinkOnly:
        def retrieve_payment_method(self, method):
            return {"id": method, "type": "link", "link": {"email": "x@example.com"}}

    with app.app_context():
        assert trials.card_had_a_trial(LinkOnly(), Subscription(provider_id="sub_link"), "pm_link")
        assert trials.fingerprint_of({"type": "sepa_debit", "sepa_debit": {"fingerprint": "fp_sepa"}}) == "fp_sepa"
