"""The billing pages' endpoints: invoices, the upcoming invoice, a card change (CONTRACT "Endpoints").

Routed on the ``subscription`` blueprint, for the caller and (``billables``) for an organisation.
"""
from app import presentation
from app.http import NO_STORE
from app.presentation import InvoiceSchema
from app.subscription import billing_pages
from app.subscription.billables import current_billable
from app.subscription.schemas import InvoicePageQuerySchema, InvoicePageSchema, SetupIntentSchema
from app.subscription.views import READ, WRITE, blp, subscription_route


@blp.route("/subscription/invoices", methods=["GET"])
@subscription_route(READ)
@blp.arguments(InvoicePageQuerySchema, location="query")
@blp.response(200, InvoicePageSchema, headers=NO_STORE)
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def invoices(query):
    """Return the user's invoices as Stripe has them, newest first; page with ``starting_after`` (an invoice id).

    422 ``validation_error`` when ``starting_after`` is not one of the user's invoices.
    """
    # The ORM user: the snapshot of the bearer check holds no customer id (``app.models.snapshots``).
    rows, has_more = billing_pages.list_invoices(current_billable(), **query)
    return {"data": [presentation.present_invoice(invoice) for invoice in rows], "has_more": has_more}


@blp.route("/subscription/invoices/upcoming", methods=["GET"])
@subscription_route(READ)
@blp.response(200, InvoiceSchema, headers=NO_STORE)
@blp.alt_response(404, response="NOT_FOUND")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def upcoming_invoice():
    """Return Stripe's preview of the next renewal invoice; 404 ``not_found`` when nothing renews."""
    return presentation.present_invoice(billing_pages.upcoming_invoice(current_billable()))


@blp.route("/subscription/payment-method", methods=["POST"])
@subscription_route(WRITE, keyed=True)
@blp.response(201, SetupIntentSchema, headers=NO_STORE)
@blp.alt_response(422, response="UNPROCESSABLE_ENTITY")
@blp.alt_response(502, response="BAD_GATEWAY")
@blp.alt_response(503, response="SERVICE_UNAVAILABLE")
def payment_method():
    """Start a card change: a SetupIntent for the user's customer (created on first use), to confirm client-side.

    When Stripe's ``setup_intent.succeeded`` arrives the card becomes the default of the customer and of
    the subscriptions, pays an open invoice in dunning and resumes a paused trial (``app.billing.card_change``).
    """
    return {"client_secret": billing_pages.setup_intent_secret(current_billable())}, 201
