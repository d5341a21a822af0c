"""Request and response bodies of the organisation endpoints (CONTRACT "Organisations")."""
from marshmallow import Schema, fields, validate

from app.fields import Email, Text, Timestamp
from app.models.organization import ADMIN, MEMBER
from app.pagination import MAX_ID
from app.presentation import CardSchema, SubscriptionSchema

NAME = validate.Length(min=1, max=255)
ASSIGNABLE_ROLES = validate.OneOf([ADMIN, MEMBER])


class OrganizationCreateSchema(Schema):
    name = Text(required=True, validate=NAME)


class OrganizationUpdateSchema(Schema):
    name = Text(load_default=None, validate=NAME)
    billing_email = Email(load_default=None, validate=validate.Length(max=320))


class OrganizationPageQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))
    starting_after = Text(load_default=None, validate=validate.Length(max=32),
                          metadata={"description": "Id of the last organisation of the previous page"})


class MemberPageQuerySchema(Schema):
    limit = fields.Integer(load_default=20, validate=validate.Range(min=1, max=100))
    starting_after = fields.Integer(load_default=None, validate=validate.Range(min=1, max=MAX_ID),
                                    metadata={"description": "User id of the last member of the previous page"})


class RoleSchema(Schema):
    role = Text(required=True, validate=ASSIGNABLE_ROLES)


class TransferSchema(Schema):
    user_id = fields.Integer(required=True, strict=True, validate=validate.Range(min=1, max=MAX_ID))
    password = Text(required=True, load_only=True, validate=validate.Length(max=1024))


class SeatsSchema(Schema):
    members = fields.Integer(required=True)
    invitations = fields.Integer(required=True, metadata={"description": "Pending invitations"})
    paid = fields.Integer(allow_none=True, required=True,
                          metadata={"description": "The live subscription's quantity at Stripe; null without one"})


class OrganizationSchema(Schema):
    id = fields.String(required=True, metadata={"example": "org_5f0c2a9e1b7d4c3a8e6f1b2d"})
    name = fields.String(required=True)
    role = fields.String(required=True, metadata={"description": "The caller's role: owner, admin or member"})
    billing_email = fields.String(allow_none=True, required=True)
    plan = fields.String(required=True, metadata={"description": "The organisation's entitled plan"})
    subscription = fields.Nested(SubscriptionSchema, allow_none=True, required=True)
    seats = fields.Nested(SeatsSchema, required=True)
    card = fields.Nested(CardSchema, allow_none=True, required=True)
    created_at = Timestamp(required=True)


class OrganizationPageSchema(Schema):
    data = fields.List(fields.Nested(OrganizationSchema), required=True)
    has_more = fields.Boolean(required=True)


class MemberUserSchema(Schema):
    id = fields.Integer(required=True)
    email = fields.String(required=True)
    name = fields.String(allow_none=True, required=True)


class MemberSchema(Schema):
    user = fields.Nested(MemberUserSchema, required=True)
    role = fields.String(required=True)
    joined_at = Timestamp(required=True)


class MemberPageSchema(Schema):
    data = fields.List(fields.Nested(MemberSchema), required=True)
    has_more = fields.Boolean(required=True)


class InvitationCreateSchema(Schema):
    email = Email(required=True, validate=validate.Length(max=320))
    role = Text(load_default=MEMBER, validate=ASSIGNABLE_ROLES)


class InvitationSchema(Schema):
    id = fields.String(required=True, metadata={"example": "inv_0b6c1f2e9a7d4e5f8c3b2a1d"})
    email = fields.String(required=True)
    role = fields.String(required=True)
    invited_by = fields.Integer(allow_none=True, required=True, metadata={"description": "The inviter's user id"})
    created_at = Timestamp(required=True)
    expires_at = Timestamp(required=True)


class InvitationListSchema(Schema):
    data = fields.List(fields.Nested(InvitationSchema), required=True)


class AcceptSchema(Schema):
    token = Text(required=True, load_only=True, validate=validate.Length(min=1, max=1024))
