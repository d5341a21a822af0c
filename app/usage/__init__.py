"""Usage-based billing on Stripe's Billing Meters: service keys, the ledger, its delivery worker, usage read back."""
from app.usage.views import blp

__all__ = ["blp"]
