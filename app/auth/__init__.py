"""The ``auth`` blueprint: register, login, logout, token refresh, me, and the account endpoints."""
from app.auth import account_views  # noqa: F401  (its routes join the blueprint)
from app.auth.views import blp

__all__ = ["blp"]
