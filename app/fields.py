"""Marshmallow fields shared by the schemas."""
from marshmallow import fields

from app.timeutil import isoformat_z


class Timestamp(fields.Field):
    """An aware ``datetime`` shown as ISO 8601 UTC with a ``Z`` suffix (CONTRACT); output only.

    Documented as OpenAPI ``string``/``date-time`` (``create_app`` registers the mapping).
    """

    def _serialize(self, value, attr, obj, **kwargs):
        return isoformat_z(value)
