"""Usage endpoints (CONTRACT "Additions (fifth round)": "Usage-based billing"): thin views over ``service``."""
from flask import g

from app.api import Blueprint
from app.billing_route import billing_route
from app.extensions import db
from app.http import NO_STORE, no_store
from app.organizations import access
from app.usage import customers, keys, reading, service
from app.usage.schemas import AcceptedSchema, UsageBatchSchema, UsageQuerySchema, UsageSchema

blp = Blueprint("usage", __name__, description="Usage-based billing: reports from the app's servers, usage read back")


@blp.route("/usage/events", methods=["POST"])
@no_store
@keys.service_key_required("usage:write")
@blp.arguments(UsageBatchSchema)
@blp.response(202, AcceptedSchema, headers=NO_STORE)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def report(body):
    """Store 1 to 100 usage events for delivery to Stripe's meters; ``202`` once they are stored.

    Only a service key with ``usage:write`` (a user's token: ``403 insufficient_scope``). The batch
    is validated whole and nothing is stored unless all of it is good: ``422 validation_error``,
    ``unknown_meter`` or ``no_customer`` with ``details`` by index (``events.3.timestamp``). An
    identifier already received counts as a duplicate. 503 when Stripe's meters cannot be read.
    """
    answer = service.accept(body["events"], g.service_key.id)
    db.session.commit()
    return answer


@blp.route("/usage", methods=["GET"])
@billing_route(blp, "subscription:read", no_store=False)
@blp.arguments(UsageQuerySchema, location="query")
@blp.response(200, UsageSchema)
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def show(query):
    """The caller's usage in ``start``-``end`` (default its current period): Stripe's meter event summaries
    plus what is accepted here and not yet delivered (``pending``). Eventually consistent."""
    user = g.current_user  # the bearer path's snapshot: its customer id is read here
    return _usage_of(customers.of_user(user.id), user.subscriptions, query)


@blp.route("/organizations/<string:organization_id>/usage", methods=["GET"])
@billing_route(blp, "subscription:read", no_store=False)
@blp.arguments(UsageQuerySchema, location="query")
@blp.response(200, UsageSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def show_organization(query, organization_id):
    """The organisation's usage, as ``GET /usage``: owner and admins only (a member: ``403 forbidden``,
    anyone else: ``404``)."""
    organization = access.manager(organization_id, g.current_user).organization
    return _usage_of(organization.provider_id, organization.subscriptions, query)


def _usage_of(customer_id, subscriptions, query):
    """Stripe's summaries for ``customer_id`` in the query's window, by default the current period of the
    newest unended of ``subscriptions``."""
    start, end = query["start"], query["end"]
    if start is None or end is None:
        live = [s for s in subscriptions if s.ends_at is None]
        period = reading.default_period(live[-1].provider_id if live else None)
        start, end = start if start is not None else period[0], end if end is not None else period[1]
    return reading.usage(customer_id, start, max(end, start + 60))
