"""``/v1/setup_intents`` and ``/v1/payment_intents`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from . import payment_intents, setup_intents

bp = Blueprint("stripe_intents", __name__)


@bp.post("/v1/setup_intents")
@endpoint()
def create_setup_intent(st, params):
    return render(st, setup_intents.create(st, params), params.get("expand"))


@bp.get("/v1/setup_intents/<seti_id>")
@endpoint()
def retrieve_setup_intent(st, params, seti_id):
    return render(st, st.get("setup_intents", seti_id, "intent"), params.get("expand"))


@bp.get("/v1/setup_intents")
@endpoint()
def list_setup_intents(st, params):
    intents = newest_first(st.setup_intents.values())
    for key in ("customer", "payment_method"):
        if params.get(key):
            intents = [seti for seti in intents if seti[key] == params[key]]
    page = paginate(intents, params, "/v1/setup_intents")
    page["data"] = [render(st, seti, strip_data(params.get("expand"))) for seti in page["data"]]
    return page


@bp.post("/v1/setup_intents/<seti_id>/confirm")
@endpoint()
def confirm_setup_intent(st, params, seti_id):
    seti = st.get("setup_intents", seti_id, "intent")
    return render(st, setup_intents.confirm(st, seti, params.get("payment_method")), params.get("expand"))


@bp.get("/v1/payment_intents/<pi_id>")
@endpoint()
def retrieve_payment_intent(st, params, pi_id):
    return render(st, st.get("payment_intents", pi_id), params.get("expand"))


@bp.post("/v1/payment_intents/<pi_id>/confirm")
@endpoint()
def confirm_payment_intent(st, params, pi_id):
    pi = st.get("payment_intents", pi_id, "intent")
    payment_intents.confirm_payment_intent(st, pi, params.get("payment_method"))
    return render(st, pi, params.get("expand"))
