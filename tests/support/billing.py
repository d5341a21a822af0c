"""A paying user on the live service (``Flow``) and the steps of its subscription: subscribe, pay, settle the
webhooks, count the Stripe calls."""
import re

import pytest
import requests

from app.extensions import db
from app.models import Subscription
from tests.support.accounts import bearer, login, register

DAY = 86400


def start_flow(live, emulator, stripe_client, prices):
    """A registered, logged-in user on the live service; webhooks wait for ``flush()``."""
    app, base_url = live
    emulator.pause_delivery()
    client = app.test_client()
    register(client)
    return Flow(app, base_url, client, bearer(login(client)), emulator, stripe_client, prices)


class Flow:
    def __init__(self, app, base_url, client, headers, emulator, stripe_client, prices):
        self.app, self.base_url, self.client, self.headers = app, base_url, client, headers
        self.emulator, self.stripe, self.prices = emulator, stripe_client, prices

    def intent(self, plan="basic", expect=201):
        response = self.client.post("/subscription/intent", json={"price": self.prices[plan]}, headers=self.headers)
        assert response.status_code == expect, response.json
        return response.json

    def pay(self, client_secret, card="pm_card_visa"):
        payment_intent = client_secret.split("_secret_")[0]
        return self.stripe.v1.payment_intents.confirm(payment_intent, params={"payment_method": card})

    def deliver(self):
        result = self.emulator.flush()
        assert result["failed"] == 0, result
        return [attempt["type"] for attempt in result["attempts"]]

    def me(self):
        return self.client.get("/auth/me", headers=self.headers).json

    def notifications(self):
        """The lifecycle kinds, newest first: receipts (``payment_succeeded``) are tests/test_selling.py's."""
        data = self.client.get("/notifications?limit=100", headers=self.headers).json["data"]
        return [n["kind"] for n in data if n["kind"] != "payment_succeeded"]

    def portal(self, subscription_id, action, **form):
        session = self.client.post("/subscription/portal", json={}, headers=self.headers)
        assert session.status_code == 200, session.json
        url = session.json["url"]
        response = requests.post(f"{url}/subscriptions/{subscription_id}/{action}", data=form, timeout=10)
        assert response.status_code == 200, response.text


def settle(flow):
    """Deliver until nothing is queued (what the service calls in a webhook makes more events); return the types."""
    delivered = []
    while batch := flow.deliver():
        delivered += batch
    return delivered


def calls(flow, resource):
    return flow.emulator.control("GET", "requests")["by_resource"].get(resource, 0)


def get(flow, path, expect=200):
    response = flow.client.get(path, headers=flow.headers)
    assert response.status_code == expect, response.json
    return response.json


def save_card(flow, card, key=None):
    """The card form: a SetupIntent from the service, confirmed as Stripe.js would; return the method id."""
    secret = post(flow, "/subscription/payment-method", key=key, expect=201).json["client_secret"]
    assert re.fullmatch(r"seti_\w+_secret_\w+", secret)
    return flow.stripe.v1.setup_intents.confirm(secret.split("_secret_")[0], params={"payment_method": card})


UPDATES = "POST /v1/subscriptions"


@pytest.fixture
def prices(stripe_client):
    """Five monthly prices (``basic`` 9.00 up to ``max`` 99.00 USD), all mapped in ``PROVIDER_PLANS``."""
    product = stripe_client.v1.products.create(params={"name": "Service"})
    amounts = {"basic": 900, "pro": 2900, "team": 4900, "business": 7900, "max": 9900}
    return {plan: stripe_client.v1.prices.create(params={
        "product": product.id, "unit_amount": amount, "currency": "usd", "recurring": {"interval": "month"},
        "lookup_key": plan}).id for plan, amount in amounts.items()}


def subscribe(flow, plan="basic", card="pm_card_visa"):
    started = flow.intent(plan)
    flow.pay(started["client_secret"], card)
    flow.deliver()
    return started["subscription"]["id"]


def use_card(flow, subscription_id, card):
    """Make ``card`` (a Stripe test id) what Stripe charges for the subscription from now on."""
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    method = flow.stripe.v1.payment_methods.attach(card, params={"customer": customer})
    flow.stripe.v1.subscriptions.update(subscription_id, params={"default_payment_method": method.id})
    flow.deliver()


def post(flow, path, body=None, key=None, expect=200):
    headers = {**flow.headers, **({"Idempotency-Key": key} if key else {})}
    response = flow.client.post(path, json=body if body is not None else {}, headers=headers)
    assert response.status_code == expect, response.json
    return response


def stored(flow, subscription_id):
    with flow.app.app_context():
        row = db.session.scalars(db.select(Subscription).where(Subscription.provider_id == subscription_id)).one()
        return row.provider_price, row.quantity, row.provider_status


def updates(flow):
    return flow.emulator.control("GET", "requests")["by_resource"].get(UPDATES, 0)


def another_user(flow, email):
    client = flow.app.test_client()
    register(client, email=email)
    return Flow(flow.app, flow.base_url, client, bearer(login(client, email=email)), flow.emulator, flow.stripe,
                flow.prices)


def code_refused(response):
    return response.status_code == 422 and response.json["error"]["code"] == "invalid_promotion_code"


def stripe_requests(flow):
    return sum(flow.emulator.control("GET", "requests")["by_resource"].values())


def portal_plan_changes(flow, url):
    """The plan changes the configuration the service gave Stripe for the portal session at ``url`` allows:
    ``None`` when off, else ``{product: [price, ...]}``. Stripe answered the session with its ``configuration``
    (the emulator's record of it); the configuration is read through the API, as the portal reads it."""
    session = flow.emulator.store.portal_sessions[url.rstrip("/").rsplit("/", 1)[1]]
    configuration = flow.stripe.v1.billing_portal.configurations.retrieve(session["configuration"])
    update = configuration.features.subscription_update
    return {p.product: sorted(p.prices) for p in update.products} if update.enabled else None


def measured(flow, request):
    """Return ``(status, Stripe calls)`` of one request made by ``request()``."""
    before = stripe_requests(flow)
    status = request().status_code
    return status, stripe_requests(flow) - before


def state(flow):
    return flow.client.get("/subscription", headers=flow.headers).json


def invoices(flow, subscription_id):
    return flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data


def live_schedule(flow, subscription_id):
    schedule = flow.stripe.v1.subscriptions.retrieve(subscription_id).schedule
    return flow.stripe.v1.subscription_schedules.retrieve(schedule) if schedule else None


def to_period_end(flow, subscription_id):
    end = flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end
    flow.emulator.advance(end - flow.emulator.clock() + 60)
    flow.deliver()


def renews_on_basic(flow, subscription_id):
    """Move to the period's end and check the downgrade to ``basic`` scheduled for it applied: the plan and price
    are basic's, nothing is scheduled any more, the renewal bills 9.00 and the newest notification is
    ``plan_changed``."""
    to_period_end(flow, subscription_id)
    shown = state(flow)
    assert (shown["plan"], shown["subscription"]["price"], shown["subscription"]["scheduled_change"]) == (
        "basic", flow.prices["basic"], None)
    renewal = invoices(flow, subscription_id)[0]
    assert (renewal.billing_reason, renewal.amount_due) == ("subscription_cycle", 900)
    assert flow.notifications()[0] == "plan_changed"
