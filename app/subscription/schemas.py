"""Bodies of the subscription and notification endpoints (CONTRACT "Resources as JSON")."""
from marshmallow import Schema, fields, validate

from app.fields import STORABLE_DESCRIPTION, Text, Url
from app.notifications.schemas import NotificationSchema
from app.presentation import SubscriptionSchema


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
    # Only a web page can be returned to; the length bound is the common browser URL limit. The
    # document says "uri" (OpenAPI's format; marshmallow's own "url" is unknown to validators)
    # and the http(s) pattern, so an empty or relative URL is invalid there as it is here.
    return_url = Url(load_default=None, allow_none=True, require_tld=False, schemes={"http", "https"},
                     validate=validate.Length(min=1, max=2048),
                     metadata={"format": "uri", "pattern": r"^https?://[^\u0000]+$",
                               "description": "Where the portal's return link leads; Stripe's default when absent. "
                                              + STORABLE_DESCRIPTION})


class PortalSchema(Schema):
    url = fields.String(required=True)


class NotificationPageSchema(Schema):
    data = fields.List(fields.Nested(NotificationSchema), required=True)
    has_more = fields.Boolean(required=True)
