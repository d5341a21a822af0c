"""``CommitStripeFeatures``: ``entitlements.active_entitlement_summary.updated`` writes the customer's active
Stripe Entitlements lookup keys (CONTRACT "Additions (sixth round)", "Entitlements"); see
``app.entitlements.stripe_features``. Stale events write nothing."""
from app.billing import objects, state
from app.billing.events import COMMIT_STRIPE_FEATURES, handled_by
from app.billing.provider import get_provider
from app.entitlements import stripe_features
from app.signals import webhook_handled

EVENT_TYPES = handled_by(COMMIT_STRIPE_FEATURES)


@webhook_handled.connect
def commit_stripe_features(sender, event, **extra):
    """Write the event's active lookup keys for its customer's billable; ``True`` when it did."""
    if event["type"] not in EVENT_TYPES:
        return False
    billable = extra.get("billable") or state.billable_for_customer(objects.customer_id_of(event["data"]["object"]))
    if billable is None:
        return False
    stripe_features.commit_summary(get_provider(), billable, event)
    return True
