"""``sync`` brings a billable's Stripe Entitlements up to date too (``app.signals.billable_synced``; CONTRACT
"Additions (sixth round)", "Entitlements"): its active features read live, their change in the sync's report."""
from app.entitlements import stripe_features
from app.signals import billable_synced


@billable_synced.connect
def refresh_stripe_features(sender, provider, billable, **extra):
    """Rewrite the billable's active features from Stripe (``stripe_features.refresh``); return their change as
    ``(field, before, after)`` tuples (none when they did not change)."""
    return stripe_features.refresh(provider, billable)
