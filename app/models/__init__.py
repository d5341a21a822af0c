"""The models, importable from one place so Alembic sees every table."""
from app.models.token import AccessToken
from app.models.user import User

__all__ = ["AccessToken", "User"]
