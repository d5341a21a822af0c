"""``billing_route``: the one decorator of every view that can call Stripe for its caller (issue 43 item 3).

It applies, outermost first, what such a view used to stack by hand: ``Cache-Control: no-store``, the bearer token
(``auth_required``), the token's ability, the billable's resolution (an organisation's from the URL, with its role
check), the per-user Stripe-call limit counted at the endpoint's cost (``app.billing.call_costs``), and for a keyed
write the ``Idempotency-Key`` (which commits) with its OpenAPI parameter. flask-smorest's ``arguments`` and
``response`` stay under it, so that they run inside the limit and the key. The view is marked with what it was given
(``BILLING_ROUTE``), which ``tests/test_billing_routes.py`` reads from the app's URL map.

Not a module of ``app.subscription``: the organisation's own billing views use it too, and the billable's
resolution (``app.subscription.billables.resolved``) is handed in rather than imported, so that no package imports
another both ways.
"""
from dataclasses import dataclass

from app import http, idempotency
from app.api import Blueprint
from app.auth.bearer import ability_required, auth_required, provider_calls_limited
from app.billing.call_costs import cost_of

# The attribute of a view function that ``billing_route`` made, holding its ``BillingRoute``.
BILLING_ROUTE = "billing_route"


@dataclass(frozen=True)
class BillingRoute:
    """What ``billing_route`` gave a view: its ability, whether it resolves the billable from the URL, the Stripe
    calls one request counts (``None``: not limited), whether it takes an ``Idempotency-Key``, and whether its
    answers are ``no-store``."""

    ability: str
    resolves_billable: bool
    cost: int | None
    keyed: bool
    no_store: bool


def billing_route(blp, ability, *, keyed=False, billable=None, limited=True, no_store=True):
    """Return the decorator of a billing view of ``blp`` (a flask-smorest ``Blueprint``) named as its endpoint.

    ``ability``: the token ability it needs (``"subscription:write"``; 403 ``insufficient_scope``). ``keyed``: a POST
    that takes an ``Idempotency-Key`` (``app.idempotency.idempotent``, which commits; CONTRACT "Additions (third
    round)"). ``billable``: the decorator that resolves the billable from the URL (``billables.resolved``), for a view
    also routed under ``/organizations/<id>``. ``limited``: counted in ``PROVIDER_CALLS_RATE_LIMIT`` at
    ``cost_of("<blueprint>.<view>")`` Stripe calls (429 ``rate_limited``; CONTRACT "Changes to the fourth round"),
    looked up here so that no view names its own. ``no_store``: ``Cache-Control: no-store`` on every answer.
    """

    def decorator(view):
        route = BillingRoute(ability, billable is not None, cost_of(f"{blp.name}.{view.__name__}") if limited else None,
                             keyed, no_store)
        decorators = [auth_required, ability_required(ability)]
        if no_store:
            decorators.insert(0, http.no_store)
        if billable is not None:
            decorators.append(billable)
        if limited:
            decorators.append(provider_calls_limited)
        if keyed:
            decorators += [idempotency.idempotent, Blueprint.doc(parameters=[idempotency.PARAMETER])]
        for decorate in reversed(decorators):
            view = decorate(view)
        setattr(view, BILLING_ROUTE, route)
        return view

    return decorator
