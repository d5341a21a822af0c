"""Request and response bodies of the auth endpoints (CONTRACT "Resources as JSON")."""
from marshmallow import Schema, fields, validate

from app.fields import Timestamp
from app.subscription.schemas import SubscriptionSchema

# PostgreSQL text cannot hold NUL; refusing it here keeps such input a 422, not a 500.
NO_NUL = validate.Regexp(r"^[^\x00]*$", error="Must not contain NUL characters.")


class RegisterSchema(Schema):
    email = fields.Email(required=True, validate=validate.Length(max=320))
    password = fields.String(required=True, load_only=True, validate=validate.Length(min=8, max=1024))
    name = fields.String(load_default=None, allow_none=True, validate=[validate.Length(max=255), NO_NUL])


class LoginSchema(Schema):
    email = fields.Email(required=True, validate=validate.Length(max=320))
    password = fields.String(required=True, load_only=True, validate=validate.Length(max=1024))
    remember_me = fields.Boolean(load_default=False)


class TokenSchema(Schema):
    token_type = fields.String(required=True, metadata={"example": "Bearer"})
    access_token = fields.String(required=True, metadata={"description": "<id>|<secret>; send as a bearer token"})
    expires_at = Timestamp(allow_none=True, required=True)


class CardSchema(Schema):
    brand = fields.String(required=True)
    last4 = fields.String(required=True)


class UserSchema(Schema):
    id = fields.Integer(required=True)
    email = fields.String(required=True)
    name = fields.String(allow_none=True, required=True)
    plan = fields.String(required=True, metadata={"description": "Entitled plan at the time of the request"})
    card = fields.Nested(CardSchema, allow_none=True, required=True)
    subscription = fields.Nested(SubscriptionSchema, allow_none=True, required=True)
