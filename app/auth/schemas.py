"""Request and response bodies of the auth endpoints (CONTRACT "Resources as JSON").

Request strings use the ``app.fields`` types, which refuse NUL and unpaired surrogates (a 422, not a 500).
"""
from marshmallow import Schema, ValidationError, fields, post_load, validate

from app import email_tokens
from app.auth.abilities import ABILITIES
from app.fields import Boolean, Email, Text, Timestamp
from app.pagination import MAX_ID

# Register's rules, for every password a user sets (register, reset, change).
NEW_PASSWORD = validate.Length(min=8, max=1024)
NAME = validate.Length(max=255)


class RegisterSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))
    password = Text(required=True, load_only=True, validate=NEW_PASSWORD)
    name = Text(load_default=None, allow_none=True, validate=NAME)


class LoginSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))
    password = Text(required=True, load_only=True, validate=validate.Length(max=1024))
    remember_me = Boolean(load_default=False)


class TokenSchema(Schema):
    token_type = fields.String(required=True, metadata={"example": "Bearer"})
    access_token = fields.String(required=True, metadata={"description": "<id>|<secret>; send as a bearer token"})
    expires_at = Timestamp(allow_none=True, required=True)



# A label people read in a list: room for a script's name and purpose, well inside the 255-character column.
TOKEN_NAME_MAX = 100
# At most a year, leap years included: a longer-lived secret should be a deliberate, rotated one.
TOKEN_DAYS_MAX = 366


def _visible(value):
    if not value.strip():
        raise ValidationError("Must contain a visible character.")


def _known_abilities(values):
    unknown = [value for value in values if value not in ABILITIES]
    if unknown:
        raise ValidationError(f"Unknown abilities: {', '.join(map(repr, unknown))}. "
                              f"Known: {', '.join(ABILITIES)}.")
    if not values:
        raise ValidationError("Name at least one ability; a personal access token may do only what it names.")


class TokenCreateSchema(Schema):
    name = Text(required=True, validate=[validate.Length(min=1, max=TOKEN_NAME_MAX), _visible],
                metadata={"description": "A label shown in the token list, e.g. the script that uses it"})
    # The document states the rules _known_abilities checks, so that its one message names every
    # unknown ability instead of one error per item.
    abilities = fields.List(Text(metadata={"enum": list(ABILITIES)}), required=True, validate=_known_abilities,
                            metadata={"description": f"At least one of: {', '.join(ABILITIES)}", "minItems": 1})
    expires_in_days = fields.Integer(
        strict=True, load_default=None, allow_none=True, validate=validate.Range(min=1, max=TOKEN_DAYS_MAX),
        metadata={"description": "Lifetime in days; absent or null: the global AUTH_TOKEN_EXPIRATION"})

    @post_load
    def normalise(self, data, **kwargs):
        # Stored stripped and once each, in the fixed list's order.
        return {**data, "name": data["name"].strip(),
                "abilities": [ability for ability in ABILITIES if ability in data["abilities"]]}


class PersonalTokenSchema(TokenSchema):
    id = fields.Integer(required=True)
    name = fields.String(required=True)
    abilities = fields.List(fields.String(), required=True)


class TokenInfoSchema(Schema):
    id = fields.Integer(required=True)
    name = fields.String(required=True, metadata={"description": "auth for a login token"})
    abilities = fields.List(fields.String(), required=True, metadata={"description": "[] means every ability"})
    created_at = Timestamp(required=True)
    last_used_at = Timestamp(allow_none=True, required=True,
                             metadata={"description": "Last authenticated request, to the minute"})
    expires_at = Timestamp(allow_none=True, required=True, metadata={"description": "Effective expiry"})
    current = fields.Boolean(required=True, metadata={"description": "Whether this request was made with it"})
    user_agent = fields.String(allow_none=True, required=True, metadata={"description": "Seen at creation"})
    ip = fields.String(allow_none=True, required=True, metadata={"description": "Client address seen at creation"})


class TokenPageSchema(Schema):
    data = fields.List(fields.Nested(TokenInfoSchema), required=True)
    has_more = fields.Boolean(required=True)


class TokenPathSchema(Schema):
    token_id = fields.Integer(required=True, validate=validate.Range(min=1, max=MAX_ID))


class LogoutAllSchema(Schema):
    except_current = Boolean(load_default=False, metadata={"description": "Keep the token of this request"})


class SentSchema(Schema):
    sent = fields.Boolean(required=True, metadata={"description": "Always true: the email is queued"})


class EmailTokenSchema(Schema):
    token = Text(required=True, load_only=True, validate=validate.Length(min=1, max=email_tokens.MAX_LENGTH),
                 metadata={"description": "The token of the emailed link (the {token} of APP_URL_VERIFY_EMAIL)"})


class ForgotPasswordSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))


class ResetPasswordSchema(Schema):
    token = Text(required=True, load_only=True, validate=validate.Length(min=1, max=email_tokens.MAX_LENGTH),
                 metadata={"description": "The token of the emailed link (the {token} of APP_URL_RESET_PASSWORD)"})
    password = Text(required=True, load_only=True, validate=NEW_PASSWORD)


class PasswordChangeSchema(Schema):
    current_password = Text(required=True, load_only=True, validate=validate.Length(max=1024))
    password = Text(required=True, load_only=True, validate=NEW_PASSWORD)


class ProfileSchema(Schema):
    name = Text(required=True, allow_none=True, validate=NAME, metadata={"description": "null clears it"})


class EmailChangeSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320), metadata={"description": "The new address"})
    password = Text(required=True, load_only=True, validate=validate.Length(max=1024))


class PasswordConfirmSchema(Schema):
    password = Text(required=True, load_only=True, validate=validate.Length(max=1024))
