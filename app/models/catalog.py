from datetime import datetime

from sqlalchemy import BigInteger, Integer
from sqlalchemy.orm import Mapped, mapped_column

from app.extensions import db
from app.models.types import UTCDateTime
from app.timeutil import utcnow


class CatalogVersion(db.Model):
    """One row (``id`` 1): how many times Stripe said the catalogue changed (``product.*``, ``price.*``).

    Every worker keeps the catalogue it read from Stripe with the version it read it at, and reads
    it again once the version moved: a webhook handled by one worker refreshes them all (issue 28).
    """

    __tablename__ = "catalog_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
