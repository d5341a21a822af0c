"""Organisation endpoints (CONTRACT "Organisations"): thin views over ``service``, each commits.

Reads take ``organizations:read``, writes ``organizations:write``; the caller's role is checked by
``access`` (404 for a non-member, 403 ``forbidden`` for a role that does not allow it).
"""
from flask import g
from sqlalchemy import func, select

from app.api import Blueprint
from app.auth.bearer import ability_required, auth_required, current_user_for_update
from app.auth.schemas import PasswordConfirmSchema
from app.billing_route import billing_route
from app.extensions import db
from app.models.organization import Invitation
from app.organizations import access, service
from app.organizations.schemas import (
    MemberPageQuerySchema,
    MemberPageSchema,
    MemberSchema,
    OrganizationCreateSchema,
    OrganizationPageQuerySchema,
    OrganizationPageSchema,
    OrganizationSchema,
    OrganizationUpdateSchema,
    RoleSchema,
    TransferSchema,
)
from app.presentation.organizations import present_member, present_organization

blp = Blueprint("organizations", __name__, description="Organisations, members, invitations and their billing")

READ, WRITE = ability_required("organizations:read"), ability_required("organizations:write")


def calling_stripe(view):
    """``billing_route`` of a write here that calls Stripe (a seat, the customer's name or email, its deletion):
    counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT``; the role is the view's to check (``access``)."""
    return billing_route(blp, "organizations:write", no_store=False)(view)


def present(membership):
    """The Organization resource of the caller's membership, seats counted now."""
    organization = membership.organization
    pending = db.session.scalar(select(func.count()).select_from(Invitation)
                                .where(Invitation.organization_id == organization.id))
    return present_organization(
        membership, {"members": organization.member_count(), "invitations": pending})


@blp.route("/organizations", methods=["POST"])
@auth_required
@WRITE
@blp.arguments(OrganizationCreateSchema)
@blp.response(201, OrganizationSchema)
@blp.alt_response(403, response="FORBIDDEN")
@blp.alt_response(429, response="TOO_MANY_REQUESTS")
def create(body):
    """Create an organisation; the caller is its owner. 403 ``email_unverified`` until the caller's address is
    verified; 429 past ``ORGANIZATION_CREATE_RATE_LIMIT`` (per user)."""
    user = current_user_for_update()
    organization = service.create(user, body["name"])
    db.session.commit()
    return present(access.membership(organization.id, user))


@blp.route("/organizations", methods=["GET"])
@auth_required
@READ
@blp.arguments(OrganizationPageQuerySchema, location="query")
@blp.response(200, OrganizationPageSchema)
def index(query):
    """Return the caller's organisations, newest joined first; page with ``starting_after`` (an organisation id)."""
    rows, has_more = service.memberships_of(g.current_user, **query)
    return {"data": [present(membership) for membership in rows], "has_more": has_more}


@blp.route("/organizations/<organization_id>", methods=["GET"])
@auth_required
@READ
@blp.response(200, OrganizationSchema)
@blp.alt_response(404, response="NOT_FOUND")
def show(organization_id):
    """Return an organisation the caller is a member of; 404 otherwise."""
    return present(access.membership(organization_id, g.current_user))


@blp.route("/organizations/<organization_id>", methods=["PATCH"])
@calling_stripe
@blp.arguments(OrganizationUpdateSchema)
@blp.response(200, OrganizationSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def update(body, organization_id):
    """Rename it or set its billing email (each written to its Stripe customer first). Owner, admin. Counted
    in the caller's ``PROVIDER_CALLS_RATE_LIMIT`` as three Stripe calls (429 past it)."""
    membership = access.manager(organization_id, g.current_user)
    service.update(membership.organization, **body)
    db.session.commit()
    return present(membership)


@blp.route("/organizations/<organization_id>", methods=["DELETE"])
@calling_stripe
@blp.arguments(PasswordConfirmSchema)
@blp.response(204)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def delete(body, organization_id):
    """Delete it: the live subscription cancelled now (its usage so far invoiced) and the Stripe customer
    deleted first. Owner. Counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT`` (429 past it)."""
    membership = access.owner(organization_id, g.current_user)
    service.delete_organization(membership.organization, membership, body["password"])
    db.session.commit()


@blp.route("/organizations/<organization_id>/members", methods=["GET"])
@auth_required
@READ
@blp.arguments(MemberPageQuerySchema, location="query")
@blp.response(200, MemberPageSchema)
@blp.alt_response(404, response="NOT_FOUND")
def members(query, organization_id):
    """Return the members by user id; page with ``starting_after`` (a user id). Any member."""
    membership = access.membership(organization_id, g.current_user)
    rows, has_more = service.members(membership.organization, **query)
    return {"data": [present_member(row) for row in rows], "has_more": has_more}


@blp.route("/organizations/<organization_id>/members/<int:user_id>", methods=["PATCH"])
@calling_stripe
@blp.arguments(RoleSchema)
@blp.response(200, MemberSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def set_role(body, organization_id, user_id):
    """Make a member an admin or a member; the owner's role changes only by transfer (409). Owner, admin.
    A demoted admin's invitations die; a seat held for one of them is withdrawn at Stripe first (its invoice
    voided), counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT``."""
    membership = access.manager(organization_id, g.current_user)
    member = service.set_role(membership.organization, user_id, body["role"])
    db.session.commit()
    return present_member(member)


@blp.route("/organizations/<organization_id>/members/<int:user_id>", methods=["DELETE"])
@calling_stripe
@blp.response(204)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(409, response="CONFLICT")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def remove(organization_id, user_id):
    """Remove a member (owner, admin) or leave (the member itself): one seat fewer at Stripe first.
    The owner cannot leave: 409 ``owner_must_transfer``. Counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT``."""
    membership = access.membership(organization_id, g.current_user)
    service.remove(membership.organization, membership, user_id)
    db.session.commit()


@blp.route("/organizations/<organization_id>/transfer", methods=["POST"])
@calling_stripe
@blp.arguments(TransferSchema)
@blp.response(200, OrganizationSchema)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def transfer(body, organization_id):
    """Make another member the owner; the old owner becomes an admin. Owner, with the password.

    Without a billing email, the Stripe customer's email becomes the new owner's, at Stripe first (503:
    nothing changes); counted in the caller's ``PROVIDER_CALLS_RATE_LIMIT`` (429 past it).
    """
    membership = access.owner(organization_id, g.current_user)
    service.transfer(membership.organization, membership, body["user_id"], body["password"])
    db.session.commit()
    return present(membership)
