"""``/v1/invoices`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..billing import invoicing
from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from ..core.store import StripeError
from ..subscriptions import pending
from . import models

bp = Blueprint("stripe_invoices", __name__)


@bp.get("/v1/invoices/<inv_id>")
@endpoint()
def retrieve_invoice(st, params, inv_id):
    return render(st, st.get("invoices", inv_id), params.get("expand"))


@bp.get("/v1/invoices")
@endpoint()
def list_invoices(st, params):
    invs = newest_first(st.invoices.values())
    if params.get("customer"):
        invs = [i for i in invs if i["customer"] == params["customer"]]
    if params.get("subscription"):
        invs = [i for i in invs if i["parent"]["subscription_details"]["subscription"]
                == params["subscription"]]
    if params.get("status"):
        invs = [i for i in invs if i["status"] == params["status"]]
    page = paginate(invs, params, "/v1/invoices")
    page["data"] = [render(st, i, strip_data(params.get("expand"))) for i in page["data"]]
    return page


@bp.post("/v1/invoices/<inv_id>/pay")
@endpoint()
def pay_invoice(st, params, inv_id):
    """Charge an open invoice now (``models.pay_invoice``); 402 when the card is declined."""
    inv = st.get("invoices", inv_id)
    return render(st, models.pay_invoice(st, inv, params.get("payment_method")), params.get("expand"))


@bp.post("/v1/invoices/create_preview")
@endpoint()
def create_invoice_preview(st, params):
    """The invoice a subscription's change or next renewal makes; see ``models.preview``."""
    return models.preview(st, params)


@bp.post("/v1/invoices/<inv_id>/void")
@endpoint()
def void_invoice(st, params, inv_id):
    """Void an open invoice (``invoicing.void``), which cancels the pending update it carries
    (``pending.cancel_on_void``); any other status is Stripe's 400
    (https://docs.stripe.com/api/invoices/void: "only ... finalized invoices")."""
    inv = st.get("invoices", inv_id)
    if inv["status"] not in ("open", "uncollectible"):
        raise StripeError(400, f"You can only void open or uncollectible invoices; this invoice is {inv['status']}.",
                          code="invoice_unexpected_state")
    invoicing.void(st, inv)
    pending.cancel_on_void(st, inv)
    return render(st, inv, params.get("expand"))
