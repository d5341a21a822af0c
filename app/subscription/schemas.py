"""Bodies of the subscription and notification endpoints (CONTRACT "Resources as JSON")."""
from urllib.parse import urlsplit

from flask import current_app
from marshmallow import Schema, ValidationError, fields, validate, validates_schema

from app.errors import UnknownPrice
from app.fields import STORABLE_DESCRIPTION, Boolean, StrictQuerySchema, Text, Url
from app.notifications.schemas import NotificationSchema
from app.pagination import PageQuerySchema
from app.presentation import InvoiceSchema, PendingUpdateSchema, ScheduledChangeSchema, SubscriptionSchema


class SubscriptionStateSchema(Schema):
    plan = fields.String(required=True)
    subscription = fields.Nested(SubscriptionSchema, allow_none=True, required=True)


def refuse_foreign_hosts(data, names):
    """Raise ``ValidationError`` for each of ``names`` in ``data`` whose host is not in ``CHECKOUT_ALLOWED_HOSTS``.

    Stripe sends the customer's browser to these URLs: any other host would make the service an open redirect.
    """
    allowed = current_app.config["CHECKOUT_ALLOWED_HOSTS"]
    refused = {name: [f"The host must be one of CHECKOUT_ALLOWED_HOSTS ({', '.join(sorted(allowed))})."]
               for name in names if data.get(name) and (urlsplit(data[name]).hostname or "").lower() not in allowed}
    if refused:
        raise ValidationError(refused)


# The code a customer types (e.g. LAUNCH20), resolved at Stripe among the active promotion codes.
def promotion_code_field():
    return Text(load_default=None, validate=validate.Length(min=1, max=255), metadata={
        "description": "A promotion code as the customer typed it (e.g. LAUNCH20); unknown, inactive, expired or "
                       "not applicable: 422 invalid_promotion_code, and nothing changes"})


class SoldPrice(Text):
    """A required price id that the service sells: a key of ``PROVIDER_PLANS`` (CONTRACT "/subscription/intent"),
    the one check of every request that names a price to subscribe or move to.

    A string of 1 to 255 characters first (422 ``validation_error``); then one not sold is ``UnknownPrice`` (422
    ``unknown_price``, ``details={"price"}``), raised as the error itself so that it keeps its code, before any
    provider call. What only Stripe knows (a price it has archived, or in another currency, or a metered price
    alone) is still refused where Stripe is asked (``app.billing.prices``, ``app.usage.plans``).
    """

    def __init__(self, **kwargs):
        super().__init__(required=True, validate=validate.Length(min=1, max=255),
                         metadata={"description": "Provider price id, one of PROVIDER_PLANS"}, **kwargs)

    def _validate(self, value):
        super()._validate(value)
        if value not in current_app.config["PROVIDER_PLANS"]:
            raise UnknownPrice.for_price(value)


class IntentRequestSchema(Schema):
    price = SoldPrice()
    promotion_code = promotion_code_field()


class IntentSchema(Schema):
    subscription = fields.Nested(SubscriptionSchema, required=True)
    client_secret = fields.String(required=True, metadata={
        "description": "Confirmed client-side: the first payment (pi_..._secret_..., Stripe.js confirmPayment), or "
                       "for a free trial (status trialing) the SetupIntent that saves the card for the first "
                       "charge (seti_..._secret_..., confirmSetup)"})


# When a swap applies (CONTRACT "Plan changes at the period's end"): now, or when the current period ends.
SWAP_AT = ("now", "period_end")


def swap_at_field():
    return Text(load_default="now", validate=validate.OneOf(SWAP_AT), metadata={
        "description": "now (default), or period_end: the new price from the current period's end, through a Stripe "
                       "subscription schedule; nothing is charged before"})


def refuse_at_period_end(data):
    """A change at the period's end prorates nothing and keeps the subscription's discounts: ``ValidationError`` for
    a ``proration_date`` or a ``promotion_code`` with it."""
    if data.get("at") == "period_end":
        refused = {name: ["Not with at=period_end."] for name in ("proration_date", "promotion_code")
                   if data.get(name) is not None}
        if refused:
            raise ValidationError(refused)


class SwapRequestSchema(Schema):
    price = SoldPrice()
    proration_date = fields.Integer(strict=True, validate=validate.Range(min=0, max=2**31 - 1), load_default=None,
                                    metadata={"description": "Unix seconds: the preview's proration_date, so that the "
                                                             "charge is what it showed; at most 10 minutes old"})
    promotion_code = promotion_code_field()
    at = swap_at_field()

    @validates_schema
    def nothing_prorated_later(self, data, **kwargs):
        refuse_at_period_end(data)


class SwapPreviewQuerySchema(StrictQuerySchema):
    price = SoldPrice()
    promotion_code = promotion_code_field()
    at = swap_at_field()

    @validates_schema
    def nothing_prorated_later(self, data, **kwargs):
        refuse_at_period_end(data)


class SwapSchema(Schema):
    subscription = fields.Nested(SubscriptionSchema, required=True)
    pending_update = fields.Nested(PendingUpdateSchema, allow_none=True, required=True)
    scheduled_change = fields.Nested(ScheduledChangeSchema, allow_none=True, required=True)


class InvoiceLineSchema(Schema):
    description = fields.String(allow_none=True, required=True)
    amount = fields.Integer(required=True, metadata={"description": "Minor units; negative for a credit"})
    period_start = fields.Integer(allow_none=True, required=True, metadata={"description": "Unix seconds"})
    period_end = fields.Integer(allow_none=True, required=True, metadata={"description": "Unix seconds"})


class SwapPreviewSchema(Schema):
    amount_due = fields.Integer(required=True, metadata={"description": "Minor units of currency"})
    currency = fields.String(required=True)
    subtotal = fields.Integer(allow_none=True, required=True,
                              metadata={"description": "Minor units, after discounts, before tax (as on Invoice)"})
    tax = fields.Integer(required=True, metadata={"description": "Minor units, Stripe Tax's (0 without)"})
    total = fields.Integer(allow_none=True, required=True, metadata={"description": "Minor units, Stripe's"})
    proration_date = fields.Integer(allow_none=True, required=True,
                                    metadata={"description": "Unix seconds; send it with the swap"})
    lines = fields.List(fields.Nested(InvoiceLineSchema), required=True)


class CancelRequestSchema(Schema):
    at_period_end = Boolean(load_default=True, metadata={
        "description": "true: end at the period's end (a grace period); false: end now"})


class QuantityRequestSchema(Schema):
    quantity = fields.Integer(strict=True, required=True, validate=validate.Range(min=1, max=10_000),
                              metadata={"description": "Seats, 1 to 10,000"})


class SubscriptionBodySchema(Schema):
    subscription = fields.Nested(SubscriptionSchema, required=True)


# A Stripe invoice id.
INVOICE_ID = r"^in_[A-Za-z0-9_]+$"


class InvoicePageQuerySchema(PageQuerySchema):
    # Stripe's cursor: the id of the last invoice of the previous page.
    starting_after = Text(load_default=None, allow_none=True,
                          validate=[validate.Length(max=255), validate.Regexp(INVOICE_ID)],
                          metadata={"pattern": INVOICE_ID,
                                    "description": "Id of the last invoice of the previous page (in_...)"})


class InvoicePageSchema(Schema):
    data = fields.List(fields.Nested(InvoiceSchema), required=True)
    has_more = fields.Boolean(required=True)


class SetupIntentSchema(Schema):
    client_secret = fields.String(required=True, metadata={
        "description": "Of a SetupIntent (usage off_session) for the user's customer: confirm it client-side with "
                       "Stripe.js confirmSetup; the card then pays from the next charge on"})


class PortalRequestSchema(Schema):
    # Only a web page can be returned to; the length bound is the common browser URL limit. The
    # document says "uri" (OpenAPI's format; marshmallow's own "url" is unknown to validators)
    # and the http(s) pattern, so an empty or relative URL is invalid there as it is here.
    return_url = Url(load_default=None, allow_none=True, require_tld=False, schemes={"http", "https"},
                     validate=validate.Length(min=1, max=2048),
                     metadata={"format": "uri", "pattern": r"^https?://[^\u0000]+$",
                               "description": "Where the portal's return link leads (its host one of "
                                              "CHECKOUT_ALLOWED_HOSTS); Stripe's default when absent. "
                                              + STORABLE_DESCRIPTION})

    @validates_schema
    def allowed_hosts(self, data, **kwargs):
        refuse_foreign_hosts(data, ("return_url",))


class PortalSchema(Schema):
    url = fields.String(required=True)


class NotificationPageSchema(Schema):
    data = fields.List(fields.Nested(NotificationSchema), required=True)
    has_more = fields.Boolean(required=True)
