"""Invitation endpoints (CONTRACT "Organisations"): invite, list, revoke, accept. Each view commits."""
from flask import g

from app.auth.bearer import auth_required, current_user_for_update
from app.errors import AppError
from app.extensions import db
from app.organizations import access, invitations
from app.organizations.schemas import (
    AcceptSchema,
    InvitationCreateSchema,
    InvitationListSchema,
    InvitationSchema,
    OrganizationSchema,
)
from app.organizations.views import READ, WRITE, blp, calling_stripe, present
from app.presentation.organizations import present_invitation


@blp.route("/organizations/<organization_id>/invitations", methods=["POST"])
@auth_required
@WRITE
@blp.arguments(InvitationCreateSchema)
@blp.response(201, InvitationSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def invite(body, organization_id):
    """Invite an address: an email with a signed link, good for ``ORGANIZATION_INVITATION_TTL`` minutes.
    Owner, admin. 409 ``already_member`` / ``already_invited``; 429 past ``ORGANIZATION_INVITATION_RATE_LIMIT``."""
    membership = access.manager(organization_id, g.current_user)
    invitation = invitations.invite(membership.organization, current_user_for_update(), body["email"], body["role"])
    db.session.commit()
    return present_invitation(invitation)


@blp.route("/organizations/<organization_id>/invitations", methods=["GET"])
@auth_required
@READ
@blp.response(200, InvitationListSchema)
@blp.alt_response(404, response="NOT_FOUND")
def pending(organization_id):
    """Return the pending invitations, oldest first. Owner, admin."""
    membership = access.manager(organization_id, g.current_user)
    return {"data": [present_invitation(row) for row in invitations.pending(membership.organization)]}


@blp.route("/organizations/<organization_id>/invitations/<invitation_id>", methods=["DELETE"])
@calling_stripe
@blp.response(204)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def revoke(organization_id, invitation_id):
    """Revoke a pending invitation: its link is dead. Owner, admin. A seat held for it is withdrawn at Stripe
    first (its invoice voided), counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT``."""
    membership = access.manager(organization_id, g.current_user)
    invitations.revoke(membership.organization, invitation_id)
    db.session.commit()


@blp.route("/organizations/invitations/accept", methods=["POST"])
@calling_stripe
@blp.arguments(AcceptSchema)
@blp.response(200, OrganizationSchema)
@blp.alt_response(400, response="BAD_REQUEST")
@blp.alt_response(402, response="PAYMENT_REQUIRED")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def accept(body):
    """Join the organisation of an invitation: the caller's verified address must be the invited one (403
    ``email_mismatch`` / ``email_unverified``); 400 ``invalid_token`` for a revoked, expired, used or foreign
    token, or one whose sender is no longer the organisation's owner or admin. With a live subscription the
    seat is charged first: declined, 402 ``payment_required`` and the caller is not added (the invitation stays
    valid). Counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT`` (429 past it): while the organisation's first
    payment is open (409) a retry still asks Stripe."""
    try:
        membership = invitations.accept(current_user_for_update(), body["token"])
    except AppError as error:
        if error.status < 500:
            # What Stripe answered stands although nobody joins: a declined seat's pending change (so
            # that a second accept is 409 ``payment_pending``, not a second invoice), a sync's rows.
            db.session.commit()
        raise
    db.session.commit()
    return present(membership)
