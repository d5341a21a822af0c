"""Errors of organisations (CONTRACT "Additions (fifth round)", "Organisations"), in the one ``AppError`` tree."""
from app.errors import AppError, Conflict, NotFound


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
