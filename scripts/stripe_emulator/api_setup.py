"""``/v1/setup_intents`` routes: create, retrieve, list and confirm (``setup_intents.py``)."""

from __future__ import annotations

from flask import Blueprint

from . import setup_intents
from .api import _strip_data, newest_first
from .expand import render
from .plumbing import endpoint, paginate

bp = Blueprint("stripe_api_setup", __name__)


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
    page["data"] = [render(st, seti, _strip_data(params.get("expand"))) for seti in page["data"]]
    return page


@bp.post("/v1/setup_intents/<seti_id>/confirm")
@endpoint({"payment_method", "return_url", "use_stripe_sdk", "mandate_data", "payment_method_options",
           "payment_method_data", "client_secret"})
def confirm_setup_intent(st, params, seti_id):
    seti = st.get("setup_intents", seti_id, "intent")
    return render(st, setup_intents.confirm(st, seti, params.get("payment_method")), params.get("expand"))
