"""What an account's or an organisation's deletion asks of usage and organisations (``app.signals``:
``deletion-requested``, ``account-deleting``, ``customer-deleting``; CONTRACT "Changes to the fifth round").

Accepted usage still waiting for Stripe is refused when there is more of it than a deletion delivers, and
delivered before the customer's final invoice otherwise; a deleted account leaves its organisations first.
"""
from app.organizations import invitations
from app.organizations import service as organizations
from app.signals import account_deleting, customer_deleting, deletion_requested
from app.usage import delivery


@deletion_requested.connect
def refuse_usage_backlog(sender, billable, **extra):
    """Raise ``UsagePending`` (409) when more of the billable's usage waits than a deletion delivers."""
    if billable.provider_id:
        delivery.refuse_backlog(billable.provider_id)


@account_deleting.connect
def release_organizations(sender, user, **extra):
    """Delete the organisations ``user`` is alone in and leave the others (``organizations.service.release_account``:
    ``OwnsOrganization`` / ``MemberOfOrganizations``, 409, before any of its Stripe calls); then withdraw the seat held
    for them (``invitations.withdraw_held_for``: its invoice voided at Stripe, so that paying it later charges for
    nobody; ``SeatsHeldElsewhere``, 409, before any Stripe call for seats held in more than one organisation)."""
    invitations.refuse_unbounded_holds(user)
    organizations.release_account(user)
    invitations.withdraw_held_for(user)


@customer_deleting.connect
def deliver_pending_usage(sender, provider, customer, **extra):
    """Deliver the customer's pending usage (``usage.delivery.deliver_for_deletion``) so its final invoice bills it."""
    delivery.deliver_for_deletion(provider, customer)
