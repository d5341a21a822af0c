"""``/v1/billing_portal/sessions``: a session whose ``url`` is the portal page (``portal.py``)."""

from __future__ import annotations

from flask import Blueprint, request

from ..core.http import endpoint
from ..core.store import StripeError, new_id, public
from . import portal_configurations

bp = Blueprint("stripe_portal_sessions", __name__)


@bp.post("/v1/billing_portal/sessions")
@endpoint(required=("customer",))
def create_portal_session(st, params):
    cus = st.get("customers", params["customer"], "customer")
    if params.get("configuration"):
        config = st.get("portal_configurations", params["configuration"], "configuration")
        if not config["active"]:
            raise StripeError(400, f"The configuration {config['id']} is not active.", param="configuration")
    else:
        config = portal_configurations.default_configuration(st)
    session_id = new_id("bps_")
    session = {
        "id": session_id, "object": "billing_portal.session",
        "configuration": config["id"], "created": st.now(),
        "customer": cus["id"], "customer_account": None, "flow": None, "livemode": False,
        "locale": params.get("locale"), "on_behalf_of": None,
        "return_url": params.get("return_url"),
        "url": request.host_url.rstrip("/") + f"/portal/{session_id}",
    }
    st.portal_sessions[session_id] = session
    return public(session)
