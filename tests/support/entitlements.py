"""Entitlement features of the plans, a service key and the check/consume calls of the entitlements API."""
from sqlalchemy import event

from app.extensions import db
from tests.support.usage import make_key

FEATURES = {
    "free": {"sso": False, "ai.tokens": {"limit": 100}, "projects": {"limit": 1, "reset": "never"}},
    "basic": {"sso": False, "ai.tokens": {"limit": 1000}, "projects": {"limit": 5, "reset": "never"}},
    "pro": {"sso": True, "exports": True, "ai.tokens": {"limit": 5000}, "projects": {"limit": None, "reset": "never"},
            "seats.ai": {"limit": 3}},
}


def service_key(runner, *abilities):
    """The ``Authorization`` header of a service key holding ``abilities``."""
    plain = make_key(runner, "backend", *[part for ability in abilities for part in ("--ability", ability)])
    return {"Authorization": f"Bearer {plain}"}


def check(client, key, user_id, feature="ai.tokens", expect=200, **body):
    answer = client.post("/entitlements/check", json={"customer": {"user": user_id}, "feature": feature, **body},
                         headers=key)
    assert answer.status_code == expect, answer.json
    return answer.json


def consume(client, key, user_id, required, identifier, feature="ai.tokens", **extra):
    return check(client, key, user_id, feature, required=required, consume=True, identifier=identifier, **extra)


def attach(flow, lookup_key, product=None):
    """Attach a new Stripe feature to ``product`` (default: the product of the flow's prices)."""
    product = product or flow.stripe.v1.prices.retrieve(flow.prices["basic"]).product
    feature = flow.stripe.v1.entitlements.features.create(params={"lookup_key": lookup_key, "name": lookup_key})
    flow.stripe.v1.products.features.create(product, params={"entitlement_feature": feature.id})
    return feature


def statements_of(app, call):
    """Return ``(call(), the first word of each SQL statement it sent)`` on ``app``'s engine."""
    with app.app_context():
        engine = db.engine
    statements = []

    def count(conn, cursor, statement, *args):
        statements.append(statement.split()[0])

    event.listen(engine, "before_cursor_execute", count)
    try:
        return call(), statements
    finally:
        event.remove(engine, "before_cursor_execute", count)
