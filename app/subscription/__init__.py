"""The ``subscription`` blueprint: subscription state, intent, portal, notifications.

Importing ``organization_routes`` imports the modules whose routes join the blueprint (``selling``,
``billing_page_views``) and routes their billing views once more for organisations.
"""
from app.subscription import organization_routes  # noqa: F401
from app.subscription.views import blp

__all__ = ["blp"]
