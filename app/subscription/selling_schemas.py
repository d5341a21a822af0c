"""Bodies of the selling endpoints (CONTRACT "Additions (fourth round)" -> "Selling")."""

from marshmallow import Schema, fields, validate, validates_schema

from app.fields import Text, Url
from app.subscription.schemas import SoldPrice, promotion_code_field, refuse_foreign_hosts

COUNTRY = r"^[A-Z]{2}$"
# Stripe's tax id types: a country code and a scheme (eu_vat, ca_gst_hst, eu_oss_vat, ...).
TAX_ID_TYPE = r"^[a-z]{2}(_[a-z]{2,6}){1,3}$"


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
    price = SoldPrice()
    quantity = fields.Integer(strict=True, load_default=1, validate=validate.Range(min=1, max=10_000),
                              metadata={"description": "Seats, 1 to 10,000"})
    success_url = _checkout_url("Where Stripe sends the customer after paying")
    cancel_url = _checkout_url("Where Stripe sends the customer who goes back")
    promotion_code = promotion_code_field()

    @validates_schema
    def allowed_hosts(self, data, **kwargs):
        refuse_foreign_hosts(data, ("success_url", "cancel_url"))


class CheckoutSchema(Schema):
    id = fields.String(required=True, metadata={"description": "Provider Checkout Session id (cs_...)"})
    url = fields.String(required=True, metadata={
        "description": "Stripe's hosted page: send the customer's browser there to pay and subscribe"})


class AddressSchema(Schema):
    line1 = Text(required=True, validate=validate.Length(min=1, max=200))
    line2 = Text(load_default=None, allow_none=True, validate=validate.Length(max=200))
    city = Text(load_default=None, allow_none=True, validate=validate.Length(max=200))
    postal_code = Text(load_default=None, allow_none=True, validate=validate.Length(max=20))
    state = Text(load_default=None, allow_none=True, validate=validate.Length(max=200))
    country = Text(required=True, validate=validate.Regexp(COUNTRY), metadata={
        "pattern": COUNTRY, "description": "ISO 3166-1 alpha-2, upper case (DE, GB, US, ...)"})


class AddressOutSchema(Schema):
    line1 = fields.String(allow_none=True, required=True)
    line2 = fields.String(allow_none=True, required=True)
    city = fields.String(allow_none=True, required=True)
    postal_code = fields.String(allow_none=True, required=True)
    state = fields.String(allow_none=True, required=True)
    country = fields.String(allow_none=True, required=True)


class BillingDetailsRequestSchema(Schema):
    name = Text(load_default=None, allow_none=True, validate=validate.Length(min=1, max=256),
                metadata={"description": "The name on invoices; absent or null: left as it is"})
    address = fields.Nested(AddressSchema, required=True)


class VerificationSchema(Schema):
    status = fields.String(allow_none=True, required=True, metadata={
        "description": "Stripe's: pending, verified, unverified or unavailable"})
    verified_name = fields.String(allow_none=True, required=True)
    verified_address = fields.String(allow_none=True, required=True)


class TaxIdSchema(Schema):
    id = fields.String(required=True, metadata={"description": "Provider tax id (txi_...)"})
    type = fields.String(required=True)
    value = fields.String(required=True)
    country = fields.String(allow_none=True, required=True)
    verification = fields.Nested(VerificationSchema, allow_none=True, required=True)


class BillingDetailsSchema(Schema):
    name = fields.String(allow_none=True, required=True)
    address = fields.Nested(AddressOutSchema, allow_none=True, required=True)
    tax_ids = fields.List(fields.Nested(TaxIdSchema), required=True)


class TaxIdRequestSchema(Schema):
    type = Text(required=True, validate=validate.Regexp(TAX_ID_TYPE), metadata={
        "pattern": TAX_ID_TYPE, "description": "One of Stripe's tax id types, e.g. eu_vat, gb_vat, us_ein, au_abn; "
                                               "one Stripe does not know is 422 invalid_tax_id"})
    value = Text(required=True, validate=validate.Length(min=1, max=64), metadata={
        "description": "As the customer wrote it; Stripe checks its format (422 invalid_tax_id)"})
