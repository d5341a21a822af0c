"""Who may do what in an organisation: the caller's membership, found or ``404``; a role, or ``403``.

Not being a member and there being no such organisation answer alike (``404``): ids are opaque,
and a non-member learns nothing from probing them. Nothing here commits.
"""
from sqlalchemy import select

from app.extensions import db
from app.models.organization import MANAGERS, OWNER, Membership, Organization
from app.organizations.errors import Forbidden, OrganizationNotFound


def organization_by_id(organization_id):
    """Return the ``Organization`` with this id (a billable: ``models.billable``), or ``None``.

    For code that acts for an organisation without a caller, such as usage reported by the app's
    backends (``{"organization": id}``).
    """
    return db.session.get(Organization, organization_id) if isinstance(organization_id, str) else None


def membership(organization_id, user):
    """Return the caller's ``Membership`` of the organisation (its ``organization`` loaded); raise
    ``OrganizationNotFound`` (404) when there is no such organisation or ``user`` is not a member."""
    found = db.session.scalars(select(Membership).where(Membership.organization_id == organization_id,
                                                        Membership.user_id == user.id)).first()
    if found is None:
        raise OrganizationNotFound()
    return found


def require(member, roles):
    """Raise ``Forbidden`` (403) unless the membership ``member`` holds one of ``roles``; return it."""
    if member.role not in roles:
        raise Forbidden.for_role(member.role, roles)
    return member


def manager(organization_id, user):
    """The caller's membership as owner or admin: 404 for a non-member, 403 for a member."""
    return require(membership(organization_id, user), MANAGERS)


def owner(organization_id, user):
    """The caller's membership as owner: 404 for a non-member, 403 for an admin or member."""
    return require(membership(organization_id, user), {OWNER})
