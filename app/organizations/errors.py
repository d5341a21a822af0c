"""Errors of organisations (CONTRACT "Additions (fifth round)", "Organisations"), in the one ``AppError`` tree."""
from app.errors import AppError, Conflict, NotFound
from app.subscription.errors import PaymentPending, PaymentRequired, SubscriptionPastDue


class Forbidden(AppError):
    """403 ``forbidden``: the caller's role in the organisation does not allow it."""

    status = 403
    code = "forbidden"

    @classmethod
    def for_role(cls, role, allowed):
        return cls(f"Your role in this organisation ({role}) does not allow this; it takes "
                   f"{' or '.join(sorted(allowed))}.", details={"role": role})


class OrganizationNotFound(NotFound):
    """404: no such organisation, or the caller is not its member (the two are not told apart)."""

    message = "No such organisation."


class MemberNotFound(NotFound):
    message = "No such member in this organisation."


class InvitationNotFound(NotFound):
    message = "No such pending invitation in this organisation."


class OwnerMustTransfer(Conflict):
    code = "owner_must_transfer"
    message = "The owner cannot leave or be removed; transfer the organisation to another member first."


class AlreadyMember(Conflict):
    code = "already_member"
    message = "That address is already a member of the organisation."


class AlreadyInvited(Conflict):
    code = "already_invited"
    message = "That address has a pending invitation to the organisation; revoke it to invite again."


class EmailMismatch(AppError):
    status = 403
    code = "email_mismatch"
    message = "The invitation is for another email address than your account's."


class OwnsOrganization(Conflict):
    """409: the account owns an organisation that has other members (CONTRACT "Organisations")."""

    code = "owns_organization"

    @classmethod
    def for_organizations(cls, ids):
        return cls("You own an organisation with other members: transfer it (POST /organizations/<id>/transfer) "
                   "or remove them before deleting your account.", details={"organizations": ids})

    @classmethod
    def billed_alone(cls, ids):
        return cls("You are the only member of more than one organisation with a Stripe customer: delete them "
                   "(DELETE /organizations/<id>) first, all but one, before deleting your account.",
                   details={"organizations": ids})


class MemberOfOrganizations(Conflict):
    """409: the account is a member of more organisations with billed seats than its deletion leaves itself
    (CONTRACT "Changes to the fifth round": "Bounded Stripe work")."""

    code = "member_of_organizations"

    @classmethod
    def billed(cls, ids):
        return cls("You are a member of more than one organisation whose seats are billed: leave them "
                   "(DELETE /organizations/<id>/members/<your id>) first, all but one, before deleting your account.",
                   details={"organizations": ids})


class SeatChangePending(PaymentPending):
    """409 ``payment_pending``: an earlier seat change waits for its invoice; every seat change waits for it."""

    message = ("An earlier seat change of the organisation waits for its invoice to be paid (its owner and admins "
               "have been told); members can join or leave once it is paid, or once Stripe drops it unpaid.")


class SeatDeclined(PaymentRequired):
    """402 ``payment_required`` to the invitee: the new seat's charge was not paid. No invoice details:
    those go to the owner and admins (``payment_failed``, from Stripe's ``invoice.payment_failed``)."""

    message = ("The organisation's payment for a new seat was declined, so you are not a member yet: the seat is "
               "held for you, and you join (and are told) as soon as its owner or an admin pays the invoice. If it "
               "is not paid before Stripe drops the change, the hold ends and the invitation stays valid.")


class FirstPaymentOpen(PaymentPending):
    """409 ``payment_pending`` to the invitee: the organisation's subscription is still being paid."""

    message = ("The organisation's subscription is waiting for its first payment (an open Checkout, a payment or a "
               "card to add), which covers the seats it was started with; accept the invitation again once it is "
               "paid, or abandoned. The invitation stays valid.")


class SeatsPastDue(SubscriptionPastDue):
    """409 ``subscription_past_due`` to the invitee: the organisation's renewal payment failed. A seat added then
    would be charged to the card that failed and, once charged, collected ahead of the unpaid renewal; the
    renewal comes first, as for a user's own change (``current.priced``)."""

    @classmethod
    def for_status(cls, status):
        return cls(f"The organisation's subscription is {status}: its last payment failed, and no seat is added until "
                   "its owner or an admin updates the payment method and the open invoice is paid. Accept the "
                   "invitation again then: it stays valid.", details={"status": status})
