"""Every view that can call Stripe for its caller is made by one decorator, ``billing_route`` (issue 43 item 3).

Read from the app's URL map: each view under ``/subscription`` (the caller's and an organisation's) and each endpoint
``app.billing.call_costs`` prices carries the ``BillingRoute`` mark, at the cost the limiter counts, and the OpenAPI
document shows what the decorator applied (the ability, the 429, the ``Idempotency-Key``).
"""
import re

from app.billing.call_costs import PROVIDER_CALL_COSTS, cost_of
from app.billing_route import BILLING_ROUTE, BillingRoute
from app.idempotency import HEADER

# ``/subscription...`` and its organisation's copy ``/organizations/<organization_id>/subscription...``.
BILLING_PATH = re.compile(r"^(/organizations/<organization_id>)?/subscription(/|$)")
# Priced in call_costs but not a bearer view of billing_route: an email link names its user itself
# (``app.auth.recovery``).
NOT_BILLING_ROUTES = {"auth.verify_email"}


def routes(app):
    """``[(rule, BillingRoute or None)]`` of every rule of ``app``."""
    return [(rule, getattr(app.view_functions[rule.endpoint], BILLING_ROUTE, None))
            for rule in app.url_map.iter_rules()]


def test_every_view_under_the_billing_paths_is_a_billing_route_resolving_the_billable(app):
    billing = [(rule.rule, route) for rule, route in routes(app) if BILLING_PATH.match(rule.rule)]
    assert len(billing) > 30, "the caller's and the organisations' billing views were walked"
    assert [path for path, route in billing if not isinstance(route, BillingRoute)] == []
    assert [path for path, route in billing if not route.resolves_billable] == []


def test_every_endpoint_in_call_costs_is_a_billing_route_at_that_cost(app):
    marked = {rule.endpoint: route for rule, route in routes(app) if route is not None}
    assert set(PROVIDER_CALL_COSTS) - set(marked) == NOT_BILLING_ROUTES
    assert {endpoint: marked[endpoint].cost for endpoint in set(PROVIDER_CALL_COSTS) & set(marked)} == \
        {endpoint: cost for endpoint, cost in PROVIDER_CALL_COSTS.items() if endpoint not in NOT_BILLING_ROUTES}


def test_the_limiter_counts_each_billing_route_at_its_cost_the_organisations_copy_too(app):
    limited = [(rule.endpoint, route.cost) for rule, route in routes(app) if route is not None and route.cost]
    assert any(endpoint.startswith("subscription.organization_") for endpoint, _ in limited)
    assert [(endpoint, cost) for endpoint, cost in limited if cost_of(endpoint) != cost] == []


def openapi_path(rule):
    """Flask's ``/a/<int:b>`` as OpenAPI's ``/a/{b}``."""
    return re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule)


def test_the_document_shows_what_each_billing_route_applied(app, client):
    paths = client.get("/openapi.json").json["paths"]
    shown = []
    for rule, route in routes(app):
        if route is None:
            continue
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            operation = paths[openapi_path(rule.rule)][method.lower()]
            keyed = any(parameter.get("name") == HEADER for parameter in operation.get("parameters", []))
            shown.append((rule.endpoint, operation["x-abilities"], "401" in operation["responses"],
                          "429" in operation["responses"], keyed))
    assert len(shown) > 35
    assert shown == [(rule.endpoint, [route.ability], True, route.cost is not None, route.keyed)
                     for rule, route in routes(app) if route is not None]
