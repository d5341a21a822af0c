"""The ``organizations`` blueprint: organisations, members, roles, invitations, and their billing."""
from app.organizations.views import blp

__all__ = ["blp"]
