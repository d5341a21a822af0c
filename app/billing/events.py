"""Provider event types the service needs (SPEC 4 rule 6): one constant for checks and set-up."""

SUBSCRIPTION_EVENTS = (
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
)

# invoice.payment_succeeded is the legacy twin of invoice.paid; the listener handles both.
PAYMENT_METHOD_EVENTS = ("invoice.paid", "customer.updated")

REQUIRED_EVENT_TYPES = SUBSCRIPTION_EVENTS + PAYMENT_METHOD_EVENTS


def missing_event_types(enabled_events):
    """Return the required event types an endpoint with ``enabled_events`` would not receive."""
    enabled = set(enabled_events or ())
    if "*" in enabled:
        return []
    return [event_type for event_type in REQUIRED_EVENT_TYPES if event_type not in enabled]
