"""The ``organizations`` blueprint: organisations, members, roles, invitations, and their billing."""
from app.organizations import invitation_views  # noqa: F401 (its routes join the blueprint)
from app.organizations.views import blp

__all__ = ["blp"]
