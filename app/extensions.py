"""Unbound extension objects; ``create_app`` binds them with ``init_app``."""
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData

from app.api import Api
from app.db_session import Session
from app.rate_limit import RateLimiter

# Views keep using objects after committing; reloading every attribute would cost a query each.
db = SQLAlchemy(
    # Named constraints, so migrations can drop or alter them on SQLite and PostgreSQL alike.
    metadata=MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "ck": "ck_%(table_name)s_%(constraint_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    ),
    session_options={"expire_on_commit": False, "class_": Session},
)
limiter = RateLimiter()
api = Api()
