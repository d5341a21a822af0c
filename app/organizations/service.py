"""Organisations, their members and roles (CONTRACT "Organisations"). Nothing here commits: the view does.

Who may call what is checked by the view (``access``); these functions take the organisation and the
caller's membership as found there. Seats follow members through ``seats``, provider-first.
"""
from flask import current_app
from sqlalchemy import delete, select

from app.auth import profile
from app.auth.recovery import check_password
from app.billing import customers
from app.extensions import db, limiter
from app.models import User
from app.models.billable import lock_row
from app.models.organization import ADMIN, MANAGERS, MEMBER, OWNER, Invitation, Membership, Organization
from app.notifications import notify_account, notify_membership
from app.organizations import invitations, seats
from app.organizations.access import require
from app.organizations.errors import MemberNotFound, MemberOfOrganizations, OwnerMustTransfer, OwnsOrganization
from app.pagination import MAX_ID, InvalidCursor
from app.signals import deletion_requested

CREATE_RATE_LIMIT_SCOPE = "organization-create"

def create(user, name):
    """Create an organisation with ``user`` as its owner; return it. No Stripe customer yet (made on first use).

    Only from a verified address (``EmailUnverified``, 403), at most ``ORGANIZATION_CREATE_RATE_LIMIT`` per user
    (429): each organisation would be a limit of its own (CONTRACT "Changes to the fifth round")."""
    invitations.require_verified(user)
    limiter.hit(current_app.config["ORGANIZATION_CREATE_RATE_LIMIT"], CREATE_RATE_LIMIT_SCOPE, user.id)
    organization = Organization(name=name)
    db.session.add(organization)
    db.session.flush()
    db.session.add(Membership(organization_id=organization.id, user_id=user.id, role=OWNER))
    return organization


def memberships_of(user, limit=20, starting_after=None):
    """Return ``(memberships, has_more)``: the user's memberships, newest joined first, each with its organisation.

    ``starting_after`` is an organisation id of the previous page; one the user is not in is
    ``InvalidCursor`` (422).
    """
    query = (select(Membership).where(Membership.user_id == user.id)
             .order_by(Membership.joined_at.desc(), Membership.organization_id.desc()))
    if starting_after is not None:
        after = db.session.get(Membership, (starting_after, user.id))
        if after is None:
            raise InvalidCursor.for_id(starting_after)
        query = query.where((Membership.joined_at < after.joined_at) | (
            (Membership.joined_at == after.joined_at) & (Membership.organization_id < after.organization_id)))
    rows = db.session.scalars(query.limit(limit + 1)).all()
    return rows[:limit], len(rows) > limit


def members(organization, limit=20, starting_after=None):
    """Return ``(memberships, has_more)``: the members, by user id ascending, after the user id ``starting_after``."""
    query = select(Membership).where(Membership.organization_id == organization.id)
    if starting_after is not None:
        query = query.where(Membership.user_id > starting_after)
    rows = db.session.scalars(query.order_by(Membership.user_id).limit(limit + 1)).all()
    return rows[:limit], len(rows) > limit


def update(organization, name=None, billing_email=None):
    """Rename the organisation and/or set its billing email; return it.

    ``billing_email`` is the Stripe customer's ``email``, and ``name`` its ``name`` (on its invoices) until
    billing details give it one of its own (``follow_customer_name``): each written at Stripe first when
    it has a customer (at most three calls), so a failure there (``ProviderUnavailable``, 503) changes
    nothing here.
    """
    organization.lock()
    db.session.refresh(organization)  # what Stripe was last told is what a request before this one wrote
    customers.follow(organization, email=billing_email, name=organization.name if name is None else name)
    if billing_email is not None:
        organization.billing_email = billing_email
    if name is not None:
        organization.name = name
    return organization


def _member(organization, user_id):
    # Read afresh (the caller's own row may be loaded from before the organisation's lock was taken).
    # A path's integer has no bound of its own: past a BIGINT the database refuses it (a 500), no member.
    found = db.session.get(Membership, (organization.id, user_id), populate_existing=True) \
        if isinstance(user_id, int) and 0 < user_id <= MAX_ID else None
    if found is None:
        raise MemberNotFound()
    return found


def set_role(organization, user_id, role):
    """Make the member ``user_id`` an ``admin`` or ``member``; return the membership. The owner's role
    changes only by transfer (``OwnerMustTransfer``, 409); ``MemberNotFound`` (404)."""
    organization.lock()  # as ``transfer``: the role read here is the one a transfer may be changing
    member = _member(organization, user_id)
    if member.role == OWNER:
        raise OwnerMustTransfer("The owner's role changes only by transferring the organisation.")
    if role not in MANAGERS:
        invitations.revoke_sent_by(organization, member.user_id)
    member.role = role
    return member


def remove(organization, caller, user_id):
    """Remove the member ``user_id`` (``caller`` is the acting membership: a manager, or the member itself).

    The owner cannot leave or be removed (``OwnerMustTransfer``, 409); anyone else removing another
    member needs a manager's role (``Forbidden``, 403). The seat goes first, at Stripe, under the
    organisation's lock (``seats.change_seats``): if Stripe fails, the member stays; while a seat change
    waits for payment, ``SeatChangePending`` (409) and the member stays.
    """
    if caller.user_id != user_id:
        require(caller, MANAGERS)
    organization.lock()
    member = _member(organization, user_id)
    if member.role == OWNER:
        raise OwnerMustTransfer()
    seats.change_seats(organization, -1, "remove")
    invitations.revoke_sent_by(organization, user_id)
    db.session.delete(member)
    db.session.flush()
    notify_membership(organization, "member_left", member.user,
                      {"reason": "left" if caller.user_id == user_id else "removed"})
    if caller.user_id != user_id:
        notify_account(member.user, "member_removed", {"organization": _named(organization)})


def transfer(organization, owner, user_id, password):
    """Make the member ``user_id`` the owner and the old owner an admin; return the organisation.

    Without a ``billing_email`` the Stripe customer's ``email`` is the owner's (``stripe_email``): it
    becomes the new owner's, at Stripe first (one call), so a failure there (``ProviderUnavailable``,
    503) changes nothing here. ``password`` is the owner's (``WrongPassword``, 403); ``MemberNotFound`` (404).
    """
    check_password(owner.user, password)
    # The new owner's user first (the order of an email change, which moves the addresses of the customers
    # mailing their owner): an address moving meanwhile is either moved here or found by that change.
    lock_row(User, user_id)
    organization.lock()
    # Re-read under the lock: a transfer that ran meanwhile made the caller an admin (two owners else),
    # a billing email set meanwhile is the customer's email now.
    db.session.refresh(owner)
    db.session.refresh(organization)
    require(owner, {OWNER})
    member = _member(organization, user_id)
    if member.user_id != owner.user_id:
        if organization.provider_id and not organization.billing_email:
            db.session.refresh(member.user)
            customers.follow(organization, email=member.user.email)
        owner.role, member.role = ADMIN, OWNER
        people = {"organization": _named(organization), "from": _person(owner.user), "to": _person(member.user)}
        for user in (member.user, owner.user):
            notify_account(user, "ownership_transferred", people)
    return organization


def _named(organization):
    return {"id": organization.id, "name": organization.name}


def _person(user):
    return {"id": user.id, "email": user.email, "name": user.name}


def delete_organization(organization, owner, password):
    """Delete the organisation, Stripe first (as ``DELETE /auth/me``): its accepted usage delivered, its live
    subscription cancelled now (the final invoice bills that usage) and its customer deleted; then members,
    invitations, subscriptions and the row. ``WrongPassword`` (403); ``UsagePending`` (409) before any Stripe
    call while more usage waits for delivery than a deletion sends (``deletion-requested``, ``app.signals``);
    ``ProviderUnavailable`` (503) deletes nothing here."""
    check_password(owner.user, password)
    deletion_requested.send(current_app._get_current_object(), billable=organization)
    for member in organization.members_with([ADMIN, MEMBER]):
        notify_account(member, "organization_deleted", {"organization": _named(organization)})
    _delete(organization)


def _delete(organization):
    organization.lock()
    if organization.provider_id:
        profile.delete_customer(organization)
    db.session.execute(delete(Invitation).where(Invitation.organization_id == organization.id))
    db.session.execute(delete(Organization).where(Organization.id == organization.id)
                       .execution_options(synchronize_session=False))


def _refuse_unbounded(memberships):
    """Refuse, before any Stripe call, what would make an account deletion's Stripe calls grow with what the
    user belongs to (CONTRACT "Changes to the fifth round": "Bounded Stripe work"): more than one
    organisation with a Stripe customer they are the only member of (``OwnsOrganization``, 409: delete them
    first), more than one other organisation whose seats are billed (``MemberOfOrganizations``, 409: leave
    them first), or one such customer's usage waiting (``UsagePending``, 409). ``call_costs`` counts the rest.
    """
    billed_alone = [member.organization for member in memberships
                    if member.role == OWNER and member.organization.provider_id]
    if len(billed_alone) > 1:
        raise OwnsOrganization.billed_alone(sorted(organization.id for organization in billed_alone))
    billed_seats = [member.organization_id for member in memberships
                    if member.role != OWNER and seats.seat_subscription(member.organization) is not None]
    if len(billed_seats) > 1:
        raise MemberOfOrganizations.billed(sorted(billed_seats))
    for organization in billed_alone:
        deletion_requested.send(current_app._get_current_object(), billable=organization)


def release_account(user):
    """Before ``user``'s account is deleted, every refusal first, before any Stripe call: ``OwnsOrganization`` (409)
    while they own an organisation with other members, what ``_refuse_unbounded`` refuses, and seats held for them in
    more than one organisation (``invitations.refuse_unbounded_holds``). Then, with every organisation it touches
    locked in id order (as ``models.organization.customers_mailing_owner`` locks them: no two requests wait on each
    other), the seat held for them is withdrawn (``invitations.withdraw_held_for``, which may still refuse, 409, or
    fail, 503, before any other Stripe write); then each organisation they are the only member of is deleted (Stripe
    first) and the others left, each seat lowered at Stripe first (``remove``)."""
    memberships = db.session.scalars(select(Membership).where(Membership.user_id == user.id)
                                     .order_by(Membership.organization_id)).all()
    owned = [member.organization_id for member in memberships
             if member.role == OWNER and member.organization.member_count() > 1]
    if owned:
        raise OwnsOrganization.for_organizations(sorted(owned))
    _refuse_unbounded(memberships)
    holds = invitations.refuse_unbounded_holds(user)
    touched = {member.organization for member in memberships} | {held.organization for held in holds}
    for organization in sorted(touched, key=lambda organization: organization.id):
        organization.lock()
    invitations.withdraw_held_for(holds)
    for member in memberships:
        if member.role == OWNER:
            _delete(member.organization)
        else:
            remove(member.organization, member, user.id)
