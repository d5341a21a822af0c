"""Bodies of the subscription and notification endpoints (CONTRACT "Resources as JSON")."""
from marshmallow import Schema, fields, validate

from app.fields import Text, Timestamp, Url
from app.listeners.kinds import NOTIFICATION_KINDS


class SubscriptionSchema(Schema):
    id = fields.String(required=True, metadata={"description": "Provider subscription id"})
    status = fields.String(required=True, metadata={"description": "Provider status, e.g. active"})
    price = fields.String(allow_none=True, required=True)
    plan = fields.String(allow_none=True, required=True)
    cancel_at_period_end = fields.Boolean(required=True)
    current_period_end = Timestamp(allow_none=True, required=True)
    ends_at = Timestamp(allow_none=True, required=True)
    on_grace_period = fields.Boolean(required=True)


class SubscriptionStateSchema(Schema):
    plan = fields.String(required=True)
    subscription = fields.Nested(SubscriptionSchema, allow_none=True, required=True)


class IntentRequestSchema(Schema):
    price = Text(required=True, validate=validate.Length(min=1, max=255),
                 metadata={"description": "Provider price id, one of PROVIDER_PLANS"})


class IntentSchema(Schema):
    subscription = fields.Nested(SubscriptionSchema, required=True)
    client_secret = fields.String(required=True, metadata={"description": "Confirms the first payment client-side"})


class PortalRequestSchema(Schema):
    # Only a web page can be returned to; the length bound is the common browser URL limit.
    return_url = Url(load_default=None, allow_none=True, require_tld=False, schemes={"http", "https"},
                     validate=validate.Length(max=2048))


class PortalSchema(Schema):
    url = fields.String(required=True)


class NotificationSchema(Schema):
    id = fields.Integer(required=True)
    kind = fields.String(required=True, metadata={
        "enum": list(NOTIFICATION_KINDS),
        "description": "What happened, decided from a provider event; `data` depends on it. "
                       + " ".join(f"`{kind}`: {text}" for kind, text in NOTIFICATION_KINDS.items())})
    created_at = Timestamp(required=True)
    data = fields.Dict(required=True)


class NotificationQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))
    starting_after = fields.Integer(load_default=None, allow_none=True,
                                    validate=validate.Range(min=1, max=2**63 - 1),
                                    metadata={"description": "Id of the last notification of the previous page"})


class NotificationPageSchema(Schema):
    data = fields.List(fields.Nested(NotificationSchema), required=True)
    has_more = fields.Boolean(required=True)
