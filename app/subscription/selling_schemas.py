"""Bodies of the selling endpoints (CONTRACT "Additions (fourth round)" -> "Selling")."""
from marshmallow import Schema, fields


class PlanSchema(Schema):
    """CONTRACT "Plan": a price of ``PROVIDER_PLANS`` as Stripe sells it, with its product."""

    plan = fields.String(required=True, metadata={"description": "The plan name PROVIDER_PLANS gives the price"})
    price = fields.String(required=True, metadata={"description": "Provider price id: what to subscribe to"})
    product = fields.String(required=True, metadata={"description": "Provider product id"})
    name = fields.String(allow_none=True, required=True, metadata={"description": "The product's name"})
    description = fields.String(allow_none=True, required=True)
    unit_amount = fields.Integer(allow_none=True, required=True,
                                 metadata={"description": "Minor units of currency per seat and interval, Stripe's"})
    currency = fields.String(required=True, metadata={"description": "ISO 4217, lower case (Stripe's)"})
    interval = fields.String(required=True, metadata={"description": "day, week, month or year"})
    interval_count = fields.Integer(required=True)
    trial_days = fields.Integer(required=True, metadata={
        "description": "Free trial days a first subscription gets (PROVIDER_TRIAL_DAYS); 0: none"})


class PlanListSchema(Schema):
    data = fields.List(fields.Nested(PlanSchema), required=True)
