"""Usage events, the service keys and customers that send them, and plans with a metered price on one ``tokens``
meter."""
import pytest

from app.extensions import db
from app.models import User


def make_key(runner, name="backend", *extra):
    """A service key made by ``flask create-service-key NAME [EXTRA...]``; return its plain text."""
    result = runner.invoke(args=["create-service-key", name, *extra])
    assert result.exit_code == 0, result.output
    return result.output.strip().splitlines()[-1]


def add_customer_user(app, customer, email):
    """Add a user whose Stripe customer is ``customer`` (made by the test at the emulator); return its id."""
    with app.app_context():
        user = User(email=email, password_hash="x", provider_id=customer)
        db.session.add(user)
        db.session.commit()
        return user.id


def event(user_id, identifier, value=1, **extra):
    return {"identifier": identifier, "event_name": "tokens", "customer": {"user": user_id}, "value": value, **extra}


@pytest.fixture
def prices(stripe_client):
    product = stripe_client.v1.products.create(params={"name": "Service"})
    return {plan: stripe_client.v1.prices.create(params={
        "product": product.id, "unit_amount": amount, "currency": "usd", "recurring": {"interval": "month"},
        "lookup_key": plan}).id for plan, amount in (("basic", 900), ("pro", 2900))}


@pytest.fixture
def live_config(stripe_client, prices):
    return metered_plans(stripe_client, prices)


def metered_plans(stripe_client, prices):
    """Each plan gets a metered price on one ``tokens`` meter (``basic`` 2, ``pro`` 1 per token); return the
    service's config for them (their ``PROVIDER_PLANS``), ``prices`` gaining ``<plan>_usage``."""
    meter = stripe_client.v1.billing.meters.create(params={
        "display_name": "Tokens", "event_name": "tokens", "default_aggregation": {"formula": "sum"}})
    product = stripe_client.v1.prices.retrieve(prices["basic"]).product
    metered = {plan: stripe_client.v1.prices.create(params={
        "product": product, "unit_amount": amount, "currency": "usd",
        "recurring": {"interval": "month", "usage_type": "metered", "meter": meter.id}}).id
        for plan, amount in (("basic", 2), ("pro", 1))}
    prices.update({f"{plan}_usage": price for plan, price in metered.items()})
    return {"PROVIDER_PLANS": {price: plan for plan, price in metered.items()}}
