"""Bodies of the usage endpoints (CONTRACT "Additions (fifth round)": "Usage-based billing")."""
import re
import time

from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.fields import StrictQuerySchema

# Stripe's window for a meter event's timestamp: the past 35 calendar days, at most 5 minutes ahead
# (https://docs.stripe.com/api/billing/meter-event/create).
PAST_WINDOW = 35 * 86400
FUTURE_WINDOW = 5 * 60
MAX_BATCH = 100
# Stripe's identifier is at most 100 characters; printable ASCII keeps it one byte a character everywhere.
_IDENTIFIER = re.compile(r"[\x20-\x7e]{1,100}")


# The identifiers of the meter events the service derives from metered quotas' consumes (``app.entitlements.
# metering``): reserved, so that no report sent here collides with one (CONTRACT "Entitlements").
RESERVED_PREFIX = "ent_"


def _identifier(value):
    if not _IDENTIFIER.fullmatch(value):
        raise ValidationError("Must be 1 to 100 printable ASCII characters.")
    if value.startswith(RESERVED_PREFIX):
        raise ValidationError(f"Identifiers starting with {RESERVED_PREFIX!r} are the service's own (metered quotas).")


# The largest id a 64-bit column holds.
MAX_VALUE = 2**63 - 1
# Stripe refuses a meter event value of more than 15 significant digits since 2026-04-22
# (https://docs.stripe.com/changelog/dahlia/2026-04-22/billing-meter-event-values-validation); a value
# accepted here would fail at delivery and never be billed. At most 15 digits in all, so that no
# reading of "significant" (trailing zeros counted or not) makes Stripe refuse what was accepted.
MAX_METER_VALUE = 10**15 - 1


class CustomerRefSchema(Schema):
    """Whose usage: ``{"user": <id>}`` or ``{"organization": "<id>"}``, exactly one."""

    user = fields.Integer(strict=True, validate=validate.Range(min=1, max=MAX_VALUE))
    organization = fields.String(validate=validate.Length(min=1, max=64))

    @validates_schema
    def one_of(self, data, **kwargs):
        if len(data) != 1:
            raise ValidationError("Give exactly one of user or organization.")


class UsageEventSchema(Schema):
    identifier = fields.String(required=True, validate=_identifier, metadata={
        "pattern": "^[\\x20-\\x7e]{1,100}$", "minLength": 1, "maxLength": 100,
        "description": "The idempotency key of this event, and the identifier Stripe receives: an identifier "
                       "already received counts as a duplicate"})
    event_name = fields.String(required=True, validate=validate.Length(min=1, max=100),
                               metadata={"description": "An active meter's event_name at Stripe"})
    customer = fields.Nested(CustomerRefSchema, required=True)
    value = fields.Integer(strict=True, required=True, validate=validate.Range(
        min=0, max=MAX_METER_VALUE, error="Must be a whole number from 0 to 999999999999999 (at most 15 digits)."),
        metadata={"description": "At most 15 digits: Stripe refuses more than 15 significant digits"})
    timestamp = fields.Integer(strict=True, load_default=None, metadata={
        "description": "Unix seconds; default now. Within the past 35 days and at most 5 minutes ahead"})

    @validates_schema
    def in_window(self, data, **kwargs):
        stamp = data.get("timestamp")
        now = int(time.time())
        if stamp is not None and not now - PAST_WINDOW <= stamp <= now + FUTURE_WINDOW:
            raise ValidationError("Must be within the past 35 days and at most 5 minutes ahead (Stripe's window).",
                                  "timestamp")


def _flat(messages, prefix=""):
    """``{"events": {3: {"timestamp": [...]}}}`` -> ``{"events.3.timestamp": [...]}``."""
    if not isinstance(messages, dict):
        return {prefix.rstrip("."): messages}
    flat = {}
    for key, value in messages.items():
        flat.update(_flat(value, f"{prefix}{key}."))
    return flat


class UsageBatchSchema(Schema):
    events = fields.List(fields.Nested(UsageEventSchema), required=True,
                         validate=validate.Length(min=1, max=MAX_BATCH))

    def handle_error(self, error, data, **kwargs):
        # Details by dotted path and index (events.3.timestamp), as the CONTRACT names them.
        raise ValidationError(_flat(error.messages)) from None


class AcceptedSchema(Schema):
    accepted = fields.Integer(required=True, metadata={"description": "Events stored now"})
    duplicates = fields.Integer(required=True, metadata={"description": "Events whose identifier was already received"})


class UsageQuerySchema(StrictQuerySchema):
    start = fields.Integer(load_default=None, validate=validate.Range(min=0, max=2**40), metadata={
        "multipleOf": 60, "description": "Unix seconds, minute-aligned; default the current period's start"})
    end = fields.Integer(load_default=None, validate=validate.Range(min=0, max=2**40), metadata={
        "multipleOf": 60, "description": "Unix seconds, minute-aligned; default the current period's end; at most "
                                         "start is read as one minute after it"})

    @validates_schema
    def aligned(self, data, **kwargs):
        for name in ("start", "end"):
            if data.get(name) is not None and data[name] % 60:
                raise ValidationError("Must be aligned with a minute (a multiple of 60).", name)


class UsageLineSchema(Schema):
    event_name = fields.String(required=True)
    meter = fields.String(required=True, metadata={"description": "Stripe's meter id"})
    value = fields.Float(required=True, metadata={"description": "Stripe's aggregated value for the period"})
    pending = fields.Integer(required=True, metadata={
        "description": "Accepted here, not yet at Stripe: the sum of their values"})


class UsageSchema(Schema):
    data = fields.List(fields.Nested(UsageLineSchema), required=True)
    start = fields.Integer(required=True)
    end = fields.Integer(required=True)
