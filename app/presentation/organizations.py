"""How an organisation, its members and its invitations are shown (CONTRACT "Organisations")."""
from app.billing import plans
from app.billing.statuses import LIVE_STATUSES
from app.presentation import present_card, present_subscription
from app.timeutil import utcnow


def present_organization(membership, seats):
    """Return the CONTRACT "Organization" resource for the caller's ``membership`` (its ``organization``
    loaded); ``seats`` is ``{"members", "invitations"}`` as counted, ``paid`` is added from the live subscription."""
    organization, now = membership.organization, utcnow()
    live = plans.newest([s for s in organization.subscriptions if s.provider_status in LIVE_STATUSES])
    return {
        "id": organization.id, "name": organization.name, "role": membership.role,
        "billing_email": organization.billing_email, "plan": plans.entitled_plan(organization, now),
        "subscription": present_subscription(plans.current_subscription(organization, now), now),
        "seats": {**seats, "paid": live.quantity if live is not None else None},
        "card": present_card(organization), "created_at": organization.created_at,
    }


def present_member(membership):
    """Return the CONTRACT "Member" resource."""
    user = membership.user
    return {"user": {"id": user.id, "email": user.email, "name": user.name}, "role": membership.role,
            "joined_at": membership.joined_at}


def present_invitation(invitation):
    """Return the CONTRACT "Invitation" resource (never its token: none is stored)."""
    return {"id": invitation.id, "email": invitation.email, "role": invitation.role,
            "invited_by": invitation.invited_by, "created_at": invitation.created_at,
            "expires_at": invitation.expires_at}
