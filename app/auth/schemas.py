"""Request and response bodies of the auth endpoints (CONTRACT "Resources as JSON").

Request strings use the ``app.fields`` types, which refuse NUL and unpaired surrogates (a 422, not a 500).
"""
from marshmallow import Schema, fields, validate

from app.fields import Email, Text, Timestamp


class RegisterSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))
    password = Text(required=True, load_only=True, validate=validate.Length(min=8, max=1024))
    name = Text(load_default=None, allow_none=True, validate=validate.Length(max=255))


class LoginSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))
    password = Text(required=True, load_only=True, validate=validate.Length(max=1024))
    remember_me = fields.Boolean(load_default=False)


class TokenSchema(Schema):
    token_type = fields.String(required=True, metadata={"example": "Bearer"})
    access_token = fields.String(required=True, metadata={"description": "<id>|<secret>; send as a bearer token"})
    expires_at = Timestamp(allow_none=True, required=True)

