"""Marshmallow fields shared by the schemas."""
import re

from marshmallow import Schema, ValidationError, fields, pre_load

from app.timeutil import isoformat_z

# PostgreSQL text cannot hold NUL, and an unpaired UTF-16 surrogate (JSON "\ud800") cannot be
# encoded as UTF-8 by argon2, the database driver or the provider's SDK: either one would be a 500.
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


# The same rule for the OpenAPI document: NUL as an ECMA-262 pattern; unpaired surrogates only in
# words, as regex engines on UTF-8 text (schemathesis's jsonschema-rs) cannot even express them.
STORABLE_PATTERN = r"^[^\u0000]*$"
STORABLE_DESCRIPTION = "Must not contain NUL characters or unpaired UTF-16 surrogates."


class _StorableText:
    """Mixin for request string fields: refuse NUL and unpaired surrogates, so such input is a 422.

    The OpenAPI document says so in each field's pattern and description (a field may give its own).
    """

    default_error_messages = {"unstorable": STORABLE_DESCRIPTION}

    def __init__(self, *args, metadata=None, **kwargs):
        metadata = {"pattern": STORABLE_PATTERN, "description": STORABLE_DESCRIPTION, **(metadata or {})}
        super().__init__(*args, metadata=metadata, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        value = super()._deserialize(value, attr, data, **kwargs)
        if _UNSTORABLE.search(value):
            raise self.make_error("unstorable")
        return value


class Text(_StorableText, fields.String):
    """A request string that the database, argon2 and the provider can all take."""


class Email(_StorableText, fields.Email):
    """A request email address that the database can store, without the spaces around it."""

    def _deserialize(self, value, attr, data, **kwargs):
        # Stripped before the address is validated: a pasted " ada@example.com " is that address.
        return super()._deserialize(value.strip() if isinstance(value, str) else value, attr, data, **kwargs)


class Url(_StorableText, fields.Url):
    """A request URL that the database and the provider can take."""


class Boolean(fields.Boolean):
    """A request boolean: JSON ``true`` or ``false`` only, as the OpenAPI document says.

    Marshmallow's own also takes ``0``, ``1``, ``"yes"``, ``"off"`` and more, which a client reading
    the document cannot know and schemathesis rightly reports as a schema violation accepted.
    """

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise self.make_error("invalid")
        return value


class Timestamp(fields.Field):
    """An aware ``datetime`` shown as ISO 8601 UTC with a ``Z`` suffix (CONTRACT); output only.

    Documented as OpenAPI ``string``/``date-time`` (``create_app`` registers the mapping).
    """

    def _serialize(self, value, attr, obj, **kwargs):
        return isoformat_z(value)


class StrictQuerySchema(Schema):
    """A query's schema that refuses a parameter it does not name (422 ``validation_error``, "Unknown
    field."), where webargs drops unknown query parameters by default: a misspelt or withdrawn one
    (swap preview's old ``proration``, a usage window's ``from``) must not silently change the answer."""

    @pre_load
    def refuse_unknown(self, data, **kwargs):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise ValidationError({name: ["Unknown field."] for name in unknown})
        return data
