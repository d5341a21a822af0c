"""Newest-first pages of a user's rows, as Stripe's lists do: ``limit`` and ``starting_after`` (an id)."""
from marshmallow import Schema, fields, validate

from app.extensions import db

MAX_ID = 2**63 - 1


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
