"""``/v1/setup_intents`` and ``/v1/payment_intents`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from . import payment_intents, setup_intents

bp = Blueprint("stripe_intents", __name__)


@bp.post("/v1/setup_intents")
@endpoint({"customer", "usage", "payment_method_types", "payment_method", "confirm", "metadata",
           "description", "automatic_payment_methods", "payment_method_options", "return_url",
           "attach_to_self", "flow_directions", "on_behalf_of", "single_use", "mandate_data"})
def create_setup_intent(st, params):
    return render(st, setup_intents.create(st, params), params.get("expand"))


@bp.get("/v1/setup_intents/<seti_id>")
@endpoint({"client_secret"})
def retrieve_setup_intent(st, params, seti_id):
    return render(st, st.get("setup_intents", seti_id, "intent"), params.get("expand"))


@bp.get("/v1/setup_intents")
@endpoint({"customer", "payment_method", "limit", "starting_after", "ending_before", "created",
           "attach_to_self"})
def list_setup_intents(st, params):
    intents = newest_first(st.setup_intents.values())
    for key in ("customer", "payment_method"):
        if params.get(key):
            intents = [seti for seti in intents if seti[key] == params[key]]
    page = paginate(intents, params, "/v1/setup_intents")
    page["data"] = [render(st, seti, strip_data(params.get("expand"))) for seti in page["data"]]
    return page


@bp.post("/v1/setup_intents/<seti_id>/confirm")
@endpoint({"payment_method", "return_url", "use_stripe_sdk", "mandate_data", "payment_method_options",
           "payment_method_data", "client_secret"})
def confirm_setup_intent(st, params, seti_id):
    seti = st.get("setup_intents", seti_id, "intent")
    return render(st, setup_intents.confirm(st, seti, params.get("payment_method")), params.get("expand"))


@bp.get("/v1/payment_intents/<pi_id>")
@endpoint({"client_secret"})
def retrieve_payment_intent(st, params, pi_id):
    return render(st, st.get("payment_intents", pi_id), params.get("expand"))


@bp.post("/v1/payment_intents/<pi_id>/confirm")
@endpoint({"payment_method", "return_url", "off_session", "setup_future_usage",
           "payment_method_options", "receipt_email", "use_stripe_sdk", "mandate_data",
           "error_on_requires_action", "payment_method_types", "client_secret"})
def confirm_payment_intent(st, params, pi_id):
    pi = st.get("payment_intents", pi_id, "intent")
    payment_intents.confirm_payment_intent(st, pi, params.get("payment_method"))
    return render(st, pi, params.get("expand"))
