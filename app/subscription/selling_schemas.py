"""Bodies of the selling endpoints (CONTRACT "Additions (fourth round)" -> "Selling")."""
from urllib.parse import urlsplit

from flask import current_app
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.fields import Text, Url
from app.subscription.schemas import promotion_code_field


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


def _checkout_url(description):
    return Url(required=True, require_tld=False, schemes={"http", "https"}, validate=validate.Length(min=1, max=2048),
               metadata={"format": "uri", "pattern": r"^https?://[^\u0000]+$",
                         "description": f"{description}; its host must be one of CHECKOUT_ALLOWED_HOSTS"})


class CheckoutRequestSchema(Schema):
    price = Text(required=True, validate=validate.Length(min=1, max=255),
                 metadata={"description": "Provider price id, one of PROVIDER_PLANS"})
    quantity = fields.Integer(strict=True, load_default=1, validate=validate.Range(min=1, max=10_000),
                              metadata={"description": "Seats, 1 to 10,000"})
    success_url = _checkout_url("Where Stripe sends the customer after paying")
    cancel_url = _checkout_url("Where Stripe sends the customer who goes back")
    promotion_code = promotion_code_field()

    @validates_schema
    def allowed_hosts(self, data, **kwargs):
        # Stripe redirects the customer's browser there: any other host would make this an open redirect.
        allowed = current_app.config["CHECKOUT_ALLOWED_HOSTS"]
        refused = {name: [f"The host must be one of CHECKOUT_ALLOWED_HOSTS ({', '.join(sorted(allowed))})."]
                   for name in ("success_url", "cancel_url")
                   if name in data and (urlsplit(data[name]).hostname or "").lower() not in allowed}
        if refused:
            raise ValidationError(refused)


class CheckoutSchema(Schema):
    id = fields.String(required=True, metadata={"description": "Provider Checkout Session id (cs_...)"})
    url = fields.String(required=True, metadata={
        "description": "Stripe's hosted page: send the customer's browser there to pay and subscribe"})
