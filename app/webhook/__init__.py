"""The ``webhook`` blueprint: ``POST /provider/webhook``."""
from app.webhook.views import blp

__all__ = ["blp"]
