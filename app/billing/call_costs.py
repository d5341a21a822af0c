"""What one request of each endpoint that calls Stripe costs against ``PROVIDER_CALLS_RATE_LIMIT``.

Data only, so that the settings' check (``app.config``) and the limiter (``app.auth.bearer``) read one table.
"""

# The most Stripe calls one request of each endpoint makes (CONTRACT "Changes to the fourth round": the
# limit counts Stripe calls), bounded whatever the user's history: tests/test_money_edges.py measures
# each against the emulator's request count. Endpoints not listed make one. The portal's
# configuration is made once per process, not per request, and is not counted. A change of a subscription the
# service knows as ``classic`` migrates it first (``migrate_billing_mode``): one call, two when Stripe answers that
# it is flexible already and it is read (``MIGRATION``), counted in every entry that changes a subscription.
MIGRATION = 2
# A deletion delivers the customer's accepted usage itself before the final invoice, at most this many events
# (one call each) and the meters (one), refusing more (409 ``usage_pending``, ``app.usage.delivery``).
USAGE_DELIVERED_ON_DELETION = 4
# Deleting one Stripe customer (``auth.profile.delete_customer``): the customer, its usage and meters, one page
# of its unended subscriptions, for the one the service keeps a void, the cancel (migrated first) and a
# replay's read (or, with none, whether it ever had one), the deletion.
CUSTOMER_DELETION = 6 + MIGRATION + 1 + USAGE_DELIVERED_ON_DELETION
# A seat change while a plan change is scheduled: the schedule read and its phases' seats updated.
SCHEDULE_SEATS = 2
# A member's seat lowered (a removal, a leave, an account deletion's): a pending change re-read (the row still shows
# one whose invoice was paid a moment ago: ``organizations.seats._refuse_while_pending``), the update and a replay's
# read.
SEAT_REMOVAL = 3 + MIGRATION + SCHEDULE_SEATS
# An email change's link moves the Stripe customer email of the user and of at most this many organisations that
# mail their owner (``models.organization.customers_mailing_owner``): more is refused before any call, at the
# request and at the link (409 ``organizations_follow_email``, ``app.auth.recovery``).
OWNER_EMAIL_FOLLOWERS = 5
PROVIDER_CALL_COSTS = {
    # The dearest path of each: promotion code (find, price, paid invoices) 3 + the open subscription read 1,
    # then read again, voided and cancelled 3 + the newest Checkout Session listed, expired, read again when
    # Stripe refuses (paid meanwhile) and its subscription read 4 + create 1. Without an open subscription
    # the billable's history (a trial's check) and the customer's creation take the cancel's place.
    "subscription.intent": 12,
    "subscription.checkout": 12,
    # promotion code (3) + read or update + a test clock's time
    "subscription.swap": 5 + MIGRATION,
    "subscription.swap_preview": 5 + MIGRATION,
    # at the period's end: the live subscription, its schedule and its release (CONTRACT "Plan changes at the
    # period's end": released first), then the update
    "subscription.cancel": 4 + MIGRATION,
    # the live subscription and its schedule (one made elsewhere refuses), a pending change re-read, the update,
    # then a scheduled change's schedule read and its phases' seats updated
    "subscription.quantity": 6 + MIGRATION,
    # the live subscription, its schedule, the release
    "subscription.withdraw_scheduled_change": 3,
    "subscription.resume": 1 + MIGRATION,
    "subscription.portal": 2,
    "subscription.payment_method": 2 + MIGRATION,
    "subscription.put_billing_details": 2,
    "subscription.show_billing_details": 2,
    "subscription.add_tax_id": 2,
    # its customer's email, and its name followed (read, then renamed while it is still the profile's)
    "organizations.update": 3,
    "auth.update_profile": 2,
    # an email-change link (counted by its token's user, ``app.auth.recovery``): the user's customer and the
    # organisations' that follow it
    "auth.verify_email": 1 + OWNER_EMAIL_FOLLOWERS,
    # the period's subscription read, the meters' list (cached), a summary per meter (one is usual)
    "usage.show": 3,
    "usage.show_organization": 3,
    # no live subscription here: one page of the unended ones (a Checkout or payment that cleared before
    # its webhook) and an open Checkout; then the seat: a pending change re-read, the update, a replay's read
    "organizations.accept": 4 + MIGRATION + SCHEDULE_SEATS,
    "organizations.remove": SEAT_REMOVAL,  # refused while a seat is held: no hold of a removed admin's to withdraw
    # a seat held for an invitation the demoted admin sent, or the one revoked, withdrawn: its invoice voided and
    # the subscription read (``organizations.invitations._withdraw``), and paid just before, the seat given back
    "organizations.set_role": 2 + SEAT_REMOVAL,
    "organizations.revoke": 2 + SEAT_REMOVAL,
    "organizations.delete": CUSTOMER_DELETION,
    # The user's customer, at most one organisation they are alone in deleted and one other left (a seat
    # lowered), whatever they belong to: more is refused first (``organizations.service._refuse_unbounded``);
    # and at most one seat held for them withdrawn, its invoice voided, the subscription read and, paid just before,
    # the seat given back (``organizations.invitations.withdraw_held_for``).
    "auth.delete_account": 2 * CUSTOMER_DELETION + 2 * SEAT_REMOVAL + 2,
}

# The dearest request: a limit below it per window would refuse every such request, so start-up refuses it.
MOST_PROVIDER_CALLS = max(PROVIDER_CALL_COSTS.values())

# The organisation's copy of a billing endpoint (``app.subscription.billables.register``) is the same
# view with this prefix on its endpoint name, and makes the same calls.
ORGANIZATION_ENDPOINT_PREFIX = "organization_"


def cost_of(endpoint):
    """Return what one request of Flask ``endpoint`` (``"blueprint.view"``) counts against the limit:
    its entry in ``PROVIDER_CALL_COSTS``, the organisation's copy of a view as the view, else 1."""
    blueprint, _, name = (endpoint or "").rpartition(".")
    name = name.removeprefix(ORGANIZATION_ENDPOINT_PREFIX)
    return PROVIDER_CALL_COSTS.get(f"{blueprint}.{name}", 1)
