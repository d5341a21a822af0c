"""What the webhook path stores of a provider event, as schemas: the envelope (the ledger row) and
the subscription object (the row writer).

The signature proves who sent an event, not that its fields have the types Stripe documents. A
field the writer stores with the wrong type or size (a dict for ``created``, a status longer than
its column, a NUL byte) would fail in the database as a 500, and the provider would resend the
same body for days; read leniently instead, it would store wrong state (an unreadable status taken
for ``incomplete`` would downgrade a paying user). So such an event is refused whole:
400 ``invalid_payload`` naming the fields, with nothing stored.
"""
from marshmallow import EXCLUDE, Schema, fields, validate

from app.fields import Text

# Year 5138: far beyond any real event, well inside what datetime and the database hold.
MAX_TIMESTAMP = 10**11
ID_LENGTH = validate.Length(min=1, max=255)


def _timestamp(required=False):
    """A Unix timestamp in seconds; null where it is not required."""
    return fields.Integer(strict=True, required=required, allow_none=not required,
                          validate=validate.Range(min=0, max=MAX_TIMESTAMP))


class EventDataSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    object = fields.Dict(required=True)
    previous_attributes = fields.Dict(allow_none=True)


class EventSchema(Schema):
    """A provider event as the ledger stores it (id, type, created) and the listeners read it."""

    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=ID_LENGTH)
    type = Text(required=True, validate=ID_LENGTH)
    created = _timestamp(required=True)
    data = fields.Nested(EventDataSchema, required=True)


class Reference(fields.Field):
    """A provider reference: an id, or an expanded object carrying one (and, for a price, its product)."""

    default_error_messages = {"invalid": "Must be an id of at most 255 characters or an object with one."}

    def _deserialize(self, value, attr, data, **kwargs):
        ident = value.get("id") if isinstance(value, dict) else value
        product = value.get("product") if isinstance(value, dict) else None
        for reference in (ident, product):
            inner = reference.get("id") if isinstance(reference, dict) else reference
            if reference is not None and (not isinstance(inner, str) or not 0 < len(inner) <= 255):
                raise self.make_error("invalid")
        return value


class ItemSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=ID_LENGTH)
    quantity = fields.Integer(strict=True, allow_none=True, validate=validate.Range(min=0, max=2**31 - 1))
    price = Reference(allow_none=True)
    plan = Reference(allow_none=True)
    current_period_end = _timestamp()


class ItemListSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    data = fields.List(fields.Nested(ItemSchema), required=True)


class MetadataSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    type = Text(allow_none=True, validate=validate.Length(max=64))


class SubscriptionObjectSchema(Schema):
    """What ``state.apply_subscription`` reads; every other field is the provider's business."""

    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=ID_LENGTH)
    status = Text(allow_none=True, validate=validate.Length(max=32))
    cancel_at_period_end = fields.Boolean(allow_none=True)
    default_payment_method = Reference(allow_none=True)
    metadata = fields.Nested(MetadataSchema, allow_none=True)
    items = fields.Nested(ItemListSchema, allow_none=True)
    created = _timestamp()
    trial_end = _timestamp()
    current_period_end = _timestamp()
    cancel_at = _timestamp()
    canceled_at = _timestamp()
    ended_at = _timestamp()

