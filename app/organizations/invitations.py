"""Invitations to an organisation (CONTRACT "Organisations"): an email with a signed link, accepted only by
the invited, verified address. Nothing here commits.

The token is ``itsdangerous``-signed with ``SECRET_KEY`` under a salt of its own (so no other email
token is one), carries the invitation's id and address, and is never stored, logged or listed: the
delivery worker mints it into the email as it sends (``email_tokens.link``). It is good while its invitation row
exists and has not expired: revoking or accepting deletes the row, and the link is dead.
"""
from datetime import timedelta

from flask import current_app
from sqlalchemy import delete, or_, select

from app import email_tokens
from app.auth.service import normalise_email
from app.billing import objects
from app.billing.provider import get_provider
from app.billing.statuses import LIVE_STATUSES
from app.errors import EmailUnverified, InvalidEmailToken
from app.extensions import db, limiter
from app.models import Subscription, User
from app.models.organization import MANAGERS, MEMBER, Invitation, Membership
from app.models.seat import HELD, SeatChange
from app.notifications import notify_account, notify_membership
from app.organizations import seats
from app.organizations.errors import AlreadyInvited, AlreadyMember, EmailMismatch, InvitationNotFound
from app.subscription import current
from app.subscription.errors import PaymentPending
from app.timeutil import utcnow

RATE_LIMIT_SCOPE = "organization-invitations"
USER_RATE_LIMIT_SCOPE = "user-invitations"


def require_verified(user):
    """Raise ``EmailUnverified`` (403) unless ``user``'s address is verified: inviting and creating an organisation
    send mail and open billing in the user's name (CONTRACT "Changes to the fifth round": limits per person)."""
    if user.email_verified_at is None:
        raise EmailUnverified("Verify your email address first: only a verified address may invite or create an "
                              "organisation.")


class SeatsHeldElsewhere(PaymentPending):
    """409 ``payment_pending``: an account deletion would void more held seats' invoices than it calls Stripe for."""

    message = ("Seats are held for you in more than one organisation while their charges wait for payment: ask "
               "their owners or admins to revoke the invitations, or wait until Stripe drops the charges, then delete "
               "your account.")


def revoke_sent_by(organization, user_id):
    """Revoke the pending invitations ``user_id`` sent for ``organization``: they carry their sender's authority,
    which ends when the sender is demoted, removed, leaves or is deleted (CONTRACT "Changes to the fifth round").
    A seat held for one of them is withdrawn after they are gone (``_withdraw``: paid meanwhile, it admits nobody).
    Under the organisation's lock."""
    held = seats.held_seat(organization)
    sent = held is not None and held.invitation_id and db.session.scalar(select(Invitation.invited_by).where(
        Invitation.id == held.invitation_id)) == user_id
    db.session.execute(delete(Invitation).where(Invitation.organization_id == organization.id,
                                                Invitation.invited_by == user_id))
    if sent:
        _withdraw(held)


def _withdraw(held):
    """End the hold ``held`` whose invitation or invitee is gone, Stripe first: its invoice is voided, which cancels
    Stripe's pending update ("To cancel a pending update, you need to void the invoice the update created",
    https://docs.stripe.com/billing/subscriptions/pending-updates#canceling-changing), so no later payment charges
    the seat; then the hold is settled from the subscription Stripe answers (``seats.settle_held``). Called once the
    invitation or the invitee is gone, so that an invoice paid just before the void admits nobody (``seats.admit``
    finds neither) and its seat is given back (``seats.give_back``). Two calls, and a seat's lowering
    (``call_costs.SEAT_REMOVAL``) for one paid just before; under the organisation's lock. Raises
    ``ProviderUnavailable`` (503), ``ProviderRejected`` (502) and ``PaymentPending`` (409: Stripe still holds the
    change, which the void did not reach), after each of which the caller's transaction is rolled back and nothing
    changed here."""
    provider = get_provider()
    if held.invoice:
        provider.void_invoice(held.invoice)
    live = provider.retrieve_subscription(held.provider_subscription)
    if objects.pending_update_of(live) is not None:
        raise PaymentPending.for_invoice(live.get("latest_invoice") if isinstance(live.get("latest_invoice"), dict)
                                         else {"id": held.invoice})
    current.write(held.organization, live)
    if seats.settle_held(held, live):  # paid just before the void: nobody to admit, the seat given back
        seats.give_back(held.organization)


def refuse_unbounded_holds(user):
    """Return the seats held for ``user`` (``SeatChange`` rows, at most one); raise ``SeatsHeldElsewhere`` (409) when
    seats are held for them in more than one organisation: an account deletion withdraws one (two Stripe calls,
    ``withdraw_held_for``), bounded (CONTRACT "Changes to the fifth round": "Bounded Stripe work"). No call."""
    # On a subscription still live, as ``seat_count`` counts them: a hold left on one that ended holds nothing.
    live = select(Subscription.provider_id).where(Subscription.provider_status.in_(LIVE_STATUSES))
    holds = db.session.scalars(select(SeatChange).where(SeatChange.user_id == user.id, SeatChange.status == HELD,
                                                        SeatChange.provider_subscription.in_(live))).all()
    if len(holds) > 1:
        raise SeatsHeldElsewhere()
    return holds


def withdraw_held_for(holds):
    """An account is being deleted: withdraw the seat held for it (``holds``: ``refuse_unbounded_holds``'), under its
    organisation's lock, which the caller takes (``_withdraw``), keeping its record without the invitee (the row
    would go with the user)."""
    for held in holds:
        db.session.refresh(held)
        withdrawing = held.status == HELD and seats.held_seat(held.organization) is held
        held.user_id = None  # first: an invoice paid just before the void admits nobody
        db.session.flush()
        if withdrawing:
            _withdraw(held)


def invite(organization, inviter, email, role=MEMBER):
    """Invite ``email`` as ``role``; return the ``Invitation``, its email queued to the address.

    ``ORGANIZATION_INVITATION_RATE_LIMIT`` per organisation (429), counted once the caller may invite.
    Raises ``AlreadyMember`` / ``AlreadyInvited`` (409: a pending invitation, or an expired one a held seat waits
    on); ``EmailUnverified`` (403) for an inviter whose address
    is not verified; ``USER_INVITATION_RATE_LIMIT`` per inviter, across organisations (429).
    """
    require_verified(inviter)
    email = normalise_email(email)
    member = db.session.scalar(select(Membership.user_id).join(User, User.id == Membership.user_id).where(
        Membership.organization_id == organization.id, User.email == email))
    if member is not None:
        raise AlreadyMember()
    if _pending(organization, email) is not None or _held_for_address(organization, email):
        raise AlreadyInvited()
    limiter.hit(current_app.config["ORGANIZATION_INVITATION_RATE_LIMIT"], RATE_LIMIT_SCOPE, organization.id)
    limiter.hit(current_app.config["USER_INVITATION_RATE_LIMIT"], USER_RATE_LIMIT_SCOPE, inviter.id)
    # An expired invitation of the address is replaced: the unique key holds one per address.
    db.session.execute(Invitation.__table__.delete().where(Invitation.organization_id == organization.id,
                                                           Invitation.email == email))
    now = utcnow()
    invitation = Invitation(organization_id=organization.id, email=email, role=role, invited_by=inviter.id,
                            created_at=now,
                            expires_at=now + timedelta(minutes=current_app.config["ORGANIZATION_INVITATION_TTL"]))
    db.session.add(invitation)
    db.session.flush()
    # Queued as the inviter's account email, to the invitee's address (it may have no account yet).
    notify_account(inviter, "invitation", {"email": email, "invitation": invitation.id,
                                           "organization": {"id": organization.id, "name": organization.name}})
    return invitation


def _held_for_address(organization, email):
    """Whether the organisation's held seat waits on an invitation of ``email``: expired or not, that invitation is
    the seat's until its invoice is paid (``seats.admit`` reads it) or the hold ends, so it is not replaced."""
    held = seats.held_seat(organization)
    invitation = db.session.get(Invitation, held.invitation_id) if held is not None and held.invitation_id else None
    return invitation is not None and invitation.email == email


def _pending(organization, email):
    return db.session.scalars(select(Invitation).where(
        Invitation.organization_id == organization.id, Invitation.email == email,
        Invitation.expires_at > utcnow())).first()


def pending(organization):
    """The organisation's invitations that have not expired, and the one its held seat waits on, expired or not (the
    seat's until paid or dropped, which a revoke withdraws: ``revoke``), oldest first."""
    held = seats.held_seat(organization)
    waiting = Invitation.expires_at > utcnow()
    if held is not None and held.invitation_id:
        waiting = or_(waiting, Invitation.id == held.invitation_id)
    return db.session.scalars(select(Invitation).where(Invitation.organization_id == organization.id, waiting)
                              .order_by(Invitation.created_at, Invitation.id)).all()


def revoke(organization, invitation_id):
    """Delete a pending invitation (its link dies with it); ``InvitationNotFound`` (404). A seat held for it is
    withdrawn once it is gone, under the organisation's lock (``_withdraw``: 503, and the invitation stays)."""
    invitation = db.session.get(Invitation, invitation_id) if isinstance(invitation_id, str) else None
    if invitation is None or invitation.organization_id != organization.id:
        raise InvitationNotFound()
    organization.lock()
    held = seats.held_seat(organization)
    db.session.delete(invitation)
    db.session.flush()
    if held is not None and held.invitation_id == invitation.id:
        _withdraw(held)


def _redeemable(token):
    """The pending ``Invitation`` a token names; ``InvalidEmailToken`` (400 ``invalid_token``) for a
    malformed, tampered, expired, revoked or used one."""
    payload = email_tokens.read_invitation_token(token)
    invitation = db.session.get(Invitation, payload["i"])
    if invitation is None or invitation.email != payload["e"] or invitation.expires_at <= utcnow():
        raise InvalidEmailToken()
    return invitation


def accept(user, token):
    """Join the organisation of the invitation ``token`` as its role; return the new ``Membership``.

    The caller's verified address must be the invited one (``EmailUnverified``, ``EmailMismatch``: 403).
    ``InvalidEmailToken`` (400) as ``_redeemable``, and when the invitation's sender is no longer the
    organisation's owner or admin: it carries their authority and is deleted (CONTRACT "Changes to the fifth
    round": "Invitations carry their sender's authority"). The seat is paid first, at Stripe, under the
    organisation's lock (``seats.change_seats``): declined, ``SeatDeclined`` (402), nobody is added yet and the
    seat is held for the caller until its invoice is paid (then the webhook admits them) or Stripe drops it (the
    invitation stays valid). While a seat change waits for payment, ``SeatChangePending`` (409); while the
    organisation's subscription is being started, ``FirstPaymentOpen`` (409): that payment covers only the
    members before; while its renewal payment has failed, ``SeatsPastDue`` (409). Accepted again once the seat
    held for the caller was paid, before its webhook came: Stripe says so, they join by that seat, and nothing
    more is charged.
    """
    invitation = _redeemable(token)
    if user.email != invitation.email:
        raise EmailMismatch()
    if user.email_verified_at is None:
        raise EmailUnverified("Verify your email address first: the invitation is for a verified address.")
    organization = invitation.organization
    organization.lock()
    sender = db.session.get(Membership, (organization.id, invitation.invited_by)) if invitation.invited_by else None
    # An invitation never grants a role above its sender's current one. Its role is admin or member (the schema's
    # ASSIGNABLE_ROLES) and a manager is at least admin, so it holds while its sender still manages; else it dies.
    if sender is None or sender.role not in MANAGERS:
        db.session.delete(invitation)
        raise InvalidEmailToken()
    if db.session.get(Membership, (organization.id, user.id)) is not None:
        raise AlreadyMember("You are already a member of this organisation.")
    seats.refuse_while_first_payment_open(organization)
    seats.change_seats(organization, +1, "accept", invitation=invitation, user=user)
    admitted = db.session.get(Membership, (organization.id, user.id))
    if admitted is not None:  # by their own held seat, whose invoice was paid before its webhook came
        return admitted
    notify_membership(organization, "member_joined", user, {"role": invitation.role})
    membership = Membership(organization_id=organization.id, user_id=user.id, role=invitation.role)
    db.session.add(membership)
    db.session.delete(invitation)
    return membership
