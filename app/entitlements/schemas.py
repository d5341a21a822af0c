"""Request and response bodies of the entitlement endpoints (CONTRACT "Entitlements")."""
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.fields import Boolean
from app.usage.schemas import MAX_VALUE, CustomerRefSchema, _identifier

FEATURE = {"pattern": "^[a-z][a-z0-9_.-]{0,63}$", "description": "A feature name of PLAN_FEATURES"}
IDENTIFIER = {"pattern": "^[\\x20-\\x7e]{1,100}$", "minLength": 1, "maxLength": 100}
# A day: a longer hold would keep units from a customer across most of a daily quota.
MAX_TTL = 86400


class CheckSchema(Schema):
    customer = fields.Nested(CustomerRefSchema, required=True)
    feature = fields.String(required=True, validate=validate.Length(min=1, max=64), metadata=FEATURE)
    required = fields.Integer(strict=True, load_default=1, validate=validate.Range(min=1, max=MAX_VALUE))
    consume = Boolean(load_default=False)
    identifier = fields.String(validate=_identifier, metadata={
        **IDENTIFIER, "description": "Required with consume: the consume's idempotency key (kept 35 days)"})

    @validates_schema
    def identified(self, data, **kwargs):
        if data.get("consume") and "identifier" not in data:
            raise ValidationError("Required with consume.", "identifier")
        if not data.get("consume") and "identifier" in data:
            raise ValidationError("Only with consume: a check takes nothing.", "identifier")


class ReservationRequestSchema(Schema):
    customer = fields.Nested(CustomerRefSchema, required=True)
    feature = fields.String(required=True, validate=validate.Length(min=1, max=64), metadata=FEATURE)
    amount = fields.Integer(strict=True, required=True, validate=validate.Range(min=1, max=MAX_VALUE))
    identifier = fields.String(required=True, validate=_identifier, metadata=IDENTIFIER)
    ttl = fields.Integer(strict=True, load_default=300, validate=validate.Range(min=1, max=MAX_TTL),
                         metadata={"description": "Seconds until the units return by themselves"})


class SettleSchema(Schema):
    amount = fields.Integer(strict=True, required=True, validate=validate.Range(min=0, max=MAX_VALUE),
                            metadata={"description": "Units consumed, at most those reserved; the rest return"})


class FeatureFields(Schema):
    """A Feature (CONTRACT "Entitlements"): a boolean's fields or a quota's."""

    type = fields.String(required=True, metadata={"enum": ["boolean", "quota"]})
    enabled = fields.Boolean(metadata={"description": "A boolean feature: whether it is on"})
    limit = fields.Integer(allow_none=True, metadata={"description": "A quota: units per period; null unlimited"})
    used = fields.Integer()
    reserved = fields.Integer()
    remaining = fields.Integer(allow_none=True)
    reset_at = fields.String(allow_none=True, metadata={"format": "date-time",
                                                        "description": "When the period ends; null for never"})
    overage = fields.Boolean()
    source = fields.String(required=True, metadata={"enum": ["plan", "stripe", "override"]})


class EntitlementsSchema(Schema):
    plan = fields.String(required=True)
    features = fields.Dict(keys=fields.String(), values=fields.Nested(FeatureFields), required=True)
    as_of = fields.String(allow_none=True, required=True, metadata={
        "format": "date-time", "description": "When Stripe last confirmed the plan (a webhook or sync)"})


class CheckAnswerSchema(FeatureFields):
    allowed = fields.Boolean(required=True)
    feature = fields.String(required=True)
    consumed = fields.Integer(required=True)
    as_of = fields.String(allow_none=True, required=True, metadata={"format": "date-time"})


class ReservationSchema(Schema):
    id = fields.String(required=True)
    amount = fields.Integer(required=True)
    expires_at = fields.String(required=True, metadata={"format": "date-time"})


class SettledSchema(Schema):
    id = fields.String(required=True)
    amount = fields.Integer(required=True)
    settled = fields.Integer(required=True)
    status = fields.String(required=True)
