"""The billable's Stripe customer: made on first use, and told the billable's email and name before the rows
change (CONTRACT "Accounts", "Organisations"; provider-first: a Stripe failure, ``ProviderUnavailable`` 503,
leaves every row as it was). The one home of these calls: profile, email change, organisation settings and
ownership transfer all come here. Nothing here commits."""
from app.billing.provider import get_provider

# ``follow(..., name=...)`` left out: the name is not changing.
_SAME = object()


def ensure_customer(billable):
    """Create the billable's provider customer on first use and store it in its ``provider_id``; return the id.

    The caller should commit before creating anything for the customer, so that webhooks for it,
    which may arrive at once, find the billable. The idempotency key makes concurrent first calls
    get the same customer; it is built from its ``idempotency_token``, not the id, so that
    another database sharing the Stripe account cannot reuse it (Stripe refuses a key reused
    with other parameters for 24 hours).
    """
    if not billable.provider_id:
        billable.provider_id = get_provider().create_customer(billable.stripe_email, billable.stripe_name,
                                                              billable.customer_metadata(),
                                                              f"customer-{billable.idempotency_token}")
    return billable.provider_id


def follow(billable, email=None, name=_SAME):
    """Tell the billable's Stripe customer, if it has one, the ``email`` it will have (``None``: unchanged; one
    call) and the ``name`` (``None`` clears it; left out: unchanged). Call before writing them locally.

    The name is followed only when it differs from ``billable.stripe_name``, and only while the customer's
    is still that one (``follow_customer_name``: one read, at most one write): a name given by billing
    details is the customer's own and stays. Raises ``ProviderUnavailable`` / ``ProviderRejected``.
    """
    if not billable.provider_id:
        return
    provider = get_provider()
    if email is not None:
        provider.update_customer_email(billable.provider_id, email)
    if name is not _SAME and name != billable.stripe_name:
        provider.follow_customer_name(billable.provider_id, billable.stripe_name, name)
