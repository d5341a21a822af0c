"""The ``auth`` blueprint: register, login, logout, token refresh, me."""
from app.auth.views import blp

__all__ = ["blp"]
