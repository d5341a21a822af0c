"""The ``subscription`` blueprint: subscription state, intent, portal, notifications."""
from app.subscription.views import blp

__all__ = ["blp"]
