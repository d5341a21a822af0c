"""Newest-first pages of a user's rows, as Stripe's lists do: ``limit`` and ``starting_after`` (an id)."""
from marshmallow import Schema, fields, validate

from app.errors import AppError
from app.extensions import db

MAX_ID = 2**63 - 1


class InvalidCursor(AppError):
    """422 ``validation_error``: ``starting_after`` names no item of the list being paged."""

    status = 422
    code = "validation_error"

    @classmethod
    def for_id(cls, starting_after):
        message = f"No item {starting_after!r} in this list to start after."
        return cls("The query parameters are not valid.", details={"starting_after": [message]})


class PageQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))
    starting_after = fields.Integer(load_default=None, allow_none=True, validate=validate.Range(min=1, max=MAX_ID),
                                    metadata={"description": "Id of the last item of the previous page"})


def newest_first(query, id_column, limit=20, starting_after=None):
    """Return ``(rows, has_more)``: up to ``limit`` rows of the ORM ``query``, highest ``id_column`` first."""
    if starting_after is not None:
        query = query.where(id_column < starting_after)
    rows = db.session.scalars(query.order_by(id_column.desc()).limit(limit + 1)).all()
    return rows[:limit], len(rows) > limit
