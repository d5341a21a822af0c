"""Subscription endpoints (CONTRACT "Endpoints"). Subscription state itself only changes by webhook or sync."""
from flask import g

from app import presentation
from app.api import Blueprint
from app.auth import recovery
from app.auth.bearer import ability_required, auth_required
from app.billing import promotions, redemptions
from app.billing_route import billing_route
from app.extensions import db
from app.http import NO_STORE
from app.notifications import list_notifications
from app.pagination import PageQuerySchema
from app.subscription import management, schedules, service
from app.subscription.billables import current_billable, resolved
from app.subscription.schemas import (
    CancelRequestSchema,
    IntentRequestSchema,
    IntentSchema,
    NotificationPageSchema,
    PortalRequestSchema,
    PortalSchema,
    QuantityRequestSchema,
    SubscriptionBodySchema,
    SubscriptionStateSchema,
    SwapPreviewQuerySchema,
    SwapPreviewSchema,
    SwapRequestSchema,
    SwapSchema,
)

blp = Blueprint("subscription", __name__, description="Subscription state and payment set-up")

READ, WRITE = "subscription:read", "subscription:write"


def subscription_route(ability, **options):
    """``billing_route`` on this blueprint, the billable resolved from the URL (``billables.resolved``): every
    billing view here is an organisation's too (``organization_routes``). ``options`` as ``billing_route``'s;
    every POST that changes billing is ``keyed=True`` (CONTRACT "Additions (third round)")."""
    return billing_route(blp, ability, billable=resolved, **options)


@blp.route("/subscription", methods=["GET"])
@subscription_route(READ, limited=False, no_store=False)
@blp.response(200, SubscriptionStateSchema)
def show():
    """Return the entitled plan and the subscription that grants it (else the newest one, or null)."""
    return presentation.present_subscription_state(g.billing_organization or g.current_user)


@blp.route("/subscription/intent", methods=["POST"])
@subscription_route(WRITE, keyed=True)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.arguments(IntentRequestSchema)
@blp.response(201, IntentSchema, headers=NO_STORE)
@blp.alt_response(200, schema=IntentSchema, description="The pending subscription for this price, reused",
                  headers=NO_STORE, success=True)
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def intent(body):
    """Create or resume a subscription awaiting payment; confirm it client-side with ``client_secret``.

    201 for a new subscription, 200 for the pending one reused; 409 ``already_subscribed`` (what the
    sync found is kept: the payment that cleared is the news); 422 ``unknown_price``; 502
    ``provider_rejected``; 503 ``provider_unavailable``. See ``service.create_intent`` (SPEC 4
    rule 4). 403 ``email_unverified`` with ``AUTH_REQUIRE_VERIFIED_EMAIL`` until the address is
    verified. ``idempotent`` commits.
    """
    recovery.require_verified_email(g.current_user)
    billable = current_billable()
    # Resolved before anything is created at Stripe: a refused code changes nothing there.
    promotion = promotions.resolve(body["promotion_code"], body["price"], billable)
    service.ensure_customer(billable)
    # Committed before the subscription is created: its webhooks may arrive before this request
    # ends, and must find the billable by the new customer id.
    db.session.commit()
    subscription, client_secret, created = service.create_intent(billable, body["price"], promotion,
                                                                  body["promotion_code"])
    return {"subscription": presentation.present_subscription(subscription), "client_secret": client_secret}, (
        201 if created else 200)


@blp.route("/subscription/portal", methods=["POST"])
@subscription_route(WRITE, keyed=True)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.arguments(PortalRequestSchema, required=False)
@blp.response(200, PortalSchema, headers=NO_STORE)
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def portal(body):
    """Return a provider billing portal URL where the user can cancel, resume or swap their plan.

    502 ``provider_rejected`` when Stripe refuses the session; 503 ``provider_unavailable``.
    """
    return {"url": service.portal_url(current_billable(), body["return_url"])}


def _changing(view):
    """The decorators every subscription change shares: a keyed write, and the errors a change answers
    (documented in the OpenAPI operation)."""
    for decorate in reversed((
        subscription_route(WRITE, keyed=True),
        blp.alt_response(402, response="PAYMENT_REQUIRED"), blp.alt_response(409, response="CONFLICT"),
        blp.alt_response(422, response="UNPROCESSABLE_ENTITY"), blp.alt_response(502, response="BAD_GATEWAY"),
        blp.alt_response(503, response="SERVICE_UNAVAILABLE"),
    )):
        view = decorate(view)
    return view


@blp.route("/subscription/swap", methods=["POST"])
@_changing
@blp.arguments(SwapRequestSchema)
@blp.response(200, SwapSchema, headers=NO_STORE)
def swap(body):
    """Move the live subscription to another price at Stripe; the row shows Stripe's answer.

    A dearer price (or another interval) is charged at once; a cheaper one follows ``PROVIDER_PRORATION``.
    402 ``payment_required`` (``details``: ``client_secret``, ``hosted_invoice_url``, ``invoice``,
    ``amount_due``, ``currency``) when that charge is declined or needs authentication: the old
    price stays until it is paid (with a promotion code, or between plans with metered prices, nothing
    waits: the details are null). The current price: 200, nothing changed. 409 ``not_subscribed`` /
    ``subscription_past_due`` / ``payment_pending`` (an earlier change awaits payment); 422
    ``unknown_price``, or ``validation_error`` for a ``proration_date`` that is not a preview's of the
    last 10 minutes. See ``management.swap``.

    With ``at=period_end`` nothing is charged: a Stripe subscription schedule moves the subscription to the price
    when the period ends (``scheduled_change``; a second one replaces it), see ``schedules.swap_at_period_end``;
    409 ``schedule_not_ours`` when a schedule made elsewhere manages the subscription. A swap now while a change is
    scheduled is 409 ``change_scheduled``.
    """
    billable, pending = current_billable(), None
    if body["promotion_code"]:
        # Before any lock of the billable (``redemptions.lock_person``'s order), to the code's record: once per person.
        redemptions.lock_person()
    if body["at"] == "period_end":
        subscription, _ = schedules.swap_at_period_end(billable, body["price"])
    else:
        schedules.refuse_while_scheduled(billable)
        subscription, pending = management.swap(billable, body["price"], body["proration_date"],
                                                body["promotion_code"])
    shown = presentation.present_subscription(subscription)
    return {"subscription": shown, "pending_update": pending, "scheduled_change": shown["scheduled_change"]}


@blp.route("/subscription/swap/preview", methods=["GET"])
@subscription_route(READ)
@blp.arguments(SwapPreviewQuerySchema, location="query")
@blp.response(200, SwapPreviewSchema, headers=NO_STORE)
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def swap_preview(query):
    """Return Stripe's preview of a swap: what it charges now (a dearer price) or the next invoice with its
    credit (a cheaper one), in minor units, and the ``proration_date`` (now) to swap with within 10 minutes.
    With ``at=period_end``: the first invoice at the new price, ``proration_date`` null."""
    if query["at"] == "period_end":
        return schedules.preview_at_period_end(current_billable(), query["price"])
    preview = management.preview_swap(current_billable(), query["price"], query["promotion_code"])
    db.session.commit()  # the proration date it issued, which the swap accepts
    return preview


@blp.route("/subscription/cancel", methods=["POST"])
@_changing
@blp.arguments(CancelRequestSchema, required=False)
@blp.response(200, SubscriptionBodySchema, headers=NO_STORE)
def cancel(body):
    """Cancel the live subscription at the period's end (default) or now. 409 ``not_subscribed``.

    At the period's end a plan change scheduled by the service is withdrawn first (Stripe refuses to schedule the
    cancellation of a subscription a schedule manages); one scheduled elsewhere is 409 ``schedule_not_ours``.
    """
    if body["at_period_end"]:
        schedules.release_before_cancel(current_billable())
    subscription = management.cancel(current_billable(), body["at_period_end"])
    return {"subscription": presentation.present_subscription(subscription)}


@blp.route("/subscription/resume", methods=["POST"])
@_changing
@blp.response(200, SubscriptionBodySchema, headers=NO_STORE)
def resume():
    """Withdraw a scheduled cancellation during the grace period.

    409 ``subscription_ended`` after it (start anew with ``/subscription/intent``), ``not_subscribed``.
    """
    return {"subscription": presentation.present_subscription(management.resume(current_billable()))}


@blp.route("/subscription/quantity", methods=["POST"])
@_changing
@blp.arguments(QuantityRequestSchema)
@blp.response(200, SubscriptionBodySchema, headers=NO_STORE)
def quantity(body):
    """Set the seats (``quantity`` 1-10,000) of the live subscription; more seats are charged at once, fewer
    follow ``PROVIDER_PRORATION``; errors as ``/subscription/swap``. A change scheduled for the period's end
    keeps the new seats (``schedules.follow_seats``); one scheduled elsewhere is 409 ``schedule_not_ours``."""
    schedules.refuse_seats_under_foreign_schedule(current_billable())
    subscription = management.set_quantity(current_billable(), body["quantity"])
    schedules.follow_seats(current_billable(), subscription, body["quantity"])
    return {"subscription": presentation.present_subscription(subscription)}


@blp.route("/subscription/scheduled-change", methods=["DELETE"])
@_changing
@blp.response(200, SubscriptionBodySchema, headers=NO_STORE)
def withdraw_scheduled_change():
    """Withdraw the plan change scheduled for the period's end (Stripe's schedule released: the subscription stays
    as it is). Nothing scheduled: 200 as it is. 409 ``schedule_not_ours`` for a schedule made elsewhere,
    ``not_subscribed``."""
    return {"subscription": presentation.present_subscription(schedules.withdraw(current_billable()))}


@blp.route("/notifications", methods=["GET"])
@auth_required
@ability_required("notifications:read")
@blp.arguments(PageQuerySchema, location="query")
@blp.response(200, NotificationPageSchema)
def notifications(query):
    """Return the user's lifecycle notifications, newest first; page with ``starting_after``."""
    rows, has_more = list_notifications(g.current_user, **query)
    return {"data": rows, "has_more": has_more}
