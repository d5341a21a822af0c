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
    "subscription.cancel": 3 + MIGRATION,
    "subscription.quantity": 1 + MIGRATION,
    "subscription.resume": 1 + MIGRATION,
    "subscription.portal": 2,
    "subscription.payment_method": 2 + MIGRATION,
    "subscription.put_billing_details": 2,
    "subscription.show_billing_details": 2,
    "subscription.add_tax_id": 2,
    # its customer's email, and its name followed (read, then renamed while it is still the profile's)
    "organizations.update": 3,
    "auth.update_profile": 2,
    # the period's subscription read, the meters' list (cached), a summary per meter (one is usual)
    "usage.show": 3,
    "usage.show_organization": 3,
    # no live subscription here: one page of the unended ones (a Checkout or payment that cleared before
    # its webhook) and an open Checkout; then the seat: a pending change re-read, the update, a replay's read
    "organizations.accept": 4 + MIGRATION,
    # the seat lowered: the update and a replay's read
    "organizations.remove": 2 + MIGRATION,
    # the customer, one page of its unended subscriptions, for the one the service keeps a void, the cancel
    # and a replay's read (or, with none, whether it ever had one), the deletion
    "organizations.delete": 6 + MIGRATION,
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
