"""``/v1/subscriptions`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from ..core.store import StripeError
from . import flexible, models, prorations, renewals, trials

bp = Blueprint("stripe_subscriptions", __name__)

@bp.post("/v1/subscriptions")
@endpoint(required=("customer",))
def create_subscription(st, params):
    sub = models.create_subscription(st, params)
    if bool(params.get("cancel_at_period_end")):
        models.update_subscription(st, sub, {"cancel_at_period_end": True})
    elif params.get("cancel_at") is not None:
        models.update_subscription(st, sub, {"cancel_at": params["cancel_at"]})
    return render(st, sub, params.get("expand"))


@bp.get("/v1/subscriptions/<sub_id>")
@endpoint()
def retrieve_subscription(st, params, sub_id):
    return render(st, st.get("subscriptions", sub_id), params.get("expand"))


@bp.get("/v1/subscriptions")
@endpoint()
def list_subscriptions(st, params):
    subs = newest_first(st.subscriptions.values())
    status = params.get("status")
    if status is None:  # Stripe's default omits canceled subscriptions.
        subs = [s for s in subs if s["status"] not in ("canceled", "incomplete_expired")]
    elif status == "ended":
        subs = [s for s in subs if s["status"] in ("canceled", "incomplete_expired")]
    elif status != "all":
        subs = [s for s in subs if s["status"] == status]
    if params.get("customer"):
        subs = [s for s in subs if s["customer"] == params["customer"]]
    if params.get("price"):
        subs = [s for s in subs
                if any(i["price"]["id"] == params["price"] for i in s["items"]["data"])]
    page = paginate(subs, params, "/v1/subscriptions")
    page["data"] = [render(st, s, strip_data(params.get("expand"))) for s in page["data"]]
    return page


@bp.post("/v1/subscriptions/<sub_id>")
@endpoint()
def update_subscription(st, params, sub_id):
    sub = st.get("subscriptions", sub_id)
    if "cancel_at_period_end" in params:
        params["cancel_at_period_end"] = bool(params["cancel_at_period_end"])
    models.update_subscription(st, sub, params)
    if params.get("trial_end") == "now":
        renewals.end_trial_now(st, sub)
    elif params.get("trial_end") is not None:
        trials.move_trial_end(st, sub, params["trial_end"])
    return render(st, sub, params.get("expand"))


@bp.post("/v1/subscriptions/<sub_id>/resume")
@endpoint()
def resume_subscription(st, params, sub_id):
    """A paused subscription starts a new period now, charged at once; see ``renewals.resume``."""
    return render(st, renewals.resume(st, st.get("subscriptions", sub_id), params), params.get("expand"))


@bp.post("/v1/subscriptions/<sub_id>/migrate")
@endpoint()
def migrate_subscription(st, params, sub_id):
    """Move a ``classic`` subscription to ``flexible`` billing mode; see ``flexible.migrate``."""
    return render(st, flexible.migrate(st, st.get("subscriptions", sub_id), params), params.get("expand"))


@bp.delete("/v1/subscriptions/<sub_id>")
@endpoint()
def cancel_subscription(st, params, sub_id):
    sub = st.get("subscriptions", sub_id)
    if sub["status"] in ("canceled", "incomplete_expired"):
        raise StripeError(404, f"No such subscription: '{sub_id}'", code="resource_missing",
                          param="id")
    details = params.get("cancellation_details") or {}
    for key in ("comment", "feedback"):
        if details.get(key):
            sub["cancellation_details"][key] = details[key]
    prorations.cancel_prorations(st, sub, bool(params.get("prorate")), bool(params.get("invoice_now")))
    models.cancel_now(st, sub)
    return render(st, sub, params.get("expand"))
