"""The ``subscription`` blueprint: subscription state, intent, portal, notifications."""
from app.subscription import selling  # noqa: F401 (its routes join the blueprint)
from app.subscription.views import blp

__all__ = ["blp"]
