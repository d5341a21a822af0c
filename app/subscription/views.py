"""Subscription endpoints (CONTRACT "Endpoints"). Subscription state itself only changes by webhook or sync."""
from flask import g

from app import presentation
from app.api import Blueprint
from app.auth.bearer import ability_required, auth_required, current_user_for_update
from app.errors import AlreadySubscribed
from app.extensions import db
from app.http import NO_STORE, no_store
from app.pagination import PageQuerySchema
from app.subscription import service
from app.subscription.schemas import (
    IntentRequestSchema,
    IntentSchema,
    NotificationPageSchema,
    PortalRequestSchema,
    PortalSchema,
    SubscriptionStateSchema,
)

blp = Blueprint("subscription", __name__, description="Subscription state and payment set-up")


@blp.route("/subscription", methods=["GET"])
@auth_required
@ability_required("subscription:read")
@blp.response(200, SubscriptionStateSchema)
def show():
    """Return the entitled plan and the subscription that grants it (else the newest one, or null)."""
    return presentation.present_subscription_state(g.current_user)


@blp.route("/subscription/intent", methods=["POST"])
@no_store
@auth_required
@ability_required("subscription:write")
@blp.arguments(IntentRequestSchema)
@blp.response(201, IntentSchema, headers=NO_STORE)
@blp.alt_response(200, schema=IntentSchema, description="The pending subscription for this price, reused",
                  headers=NO_STORE, success=True)
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def intent(body):
    """Create or resume a subscription awaiting payment; confirm it client-side with ``client_secret``.

    201 for a new subscription, 200 for the pending one reused; 409 ``already_subscribed``; 422
    ``unknown_price``; 502 ``provider_rejected``; 503 ``provider_unavailable``. See
    ``service.create_intent`` (SPEC 4 rule 4).
    """
    user = current_user_for_update()
    service.ensure_customer(user)
    # Committed before the subscription is created: its webhooks may arrive before this request
    # ends, and must find the user by the new customer id.
    db.session.commit()
    try:
        subscription, client_secret, created = service.create_intent(user, body["price"])
    except AlreadySubscribed:
        db.session.commit()  # keep what the sync found: the payment that cleared is the news
        raise
    db.session.commit()
    return {"subscription": presentation.present_subscription(subscription), "client_secret": client_secret}, (
        201 if created else 200)


@blp.route("/subscription/portal", methods=["POST"])
@no_store
@auth_required
@ability_required("subscription:write")
@blp.arguments(PortalRequestSchema, required=False)
@blp.response(200, PortalSchema, headers=NO_STORE)
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def portal(body):
    """Return a provider billing portal URL where the user can cancel, resume or swap their plan.

    502 ``provider_rejected`` when Stripe refuses the session; 503 ``provider_unavailable``.
    """
    url = service.portal_url(current_user_for_update(), body["return_url"])
    db.session.commit()
    return {"url": url}


@blp.route("/notifications", methods=["GET"])
@auth_required
@ability_required("notifications:read")
@blp.arguments(PageQuerySchema, location="query")
@blp.response(200, NotificationPageSchema)
def notifications(query):
    """Return the user's lifecycle notifications, newest first; page with ``starting_after``."""
    rows, has_more = service.list_notifications(g.current_user, **query)
    return {"data": rows, "has_more": has_more}
