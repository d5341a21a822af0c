"""What an account's or an organisation's deletion asks of usage and organisations (``app.signals``:
``deletion-requested``, ``account-deleting``, ``customer-deleting``; CONTRACT "Changes to the fifth round").

Accepted usage still waiting for Stripe is refused when there is more of it than a deletion delivers, and
delivered before the customer's final invoice otherwise; a deleted account leaves its organisations first.
"""
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
    """Withdraw the seat held for ``user`` (its invoice voided at Stripe, so that paying it later charges for nobody),
    then delete the organisations they are alone in and leave the others (``organizations.service.release_account``:
    ``OwnsOrganization`` / ``MemberOfOrganizations`` / ``SeatsHeldElsewhere``, 409, before any Stripe call)."""
    organizations.release_account(user)


@customer_deleting.connect
def deliver_pending_usage(sender, provider, customer, **extra):
    """Deliver the customer's pending usage (``usage.delivery.deliver_for_deletion``) so its final invoice bills it."""
    delivery.deliver_for_deletion(provider, customer)
