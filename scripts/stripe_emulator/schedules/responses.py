"""``/v1/subscription_schedules`` routes (https://docs.stripe.com/api/subscription_schedules)."""

from __future__ import annotations

from flask import Blueprint

from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate, strip_data
from ..core.store import StripeError
from ..subscriptions import prorations
from ..subscriptions.models import cancel_now
from . import models

bp = Blueprint("stripe_subscription_schedules", __name__)


def _subscription(st, sched):
    return st.subscriptions.get(sched["subscription"] or "")


@bp.post("/v1/subscription_schedules")
@endpoint(required=("from_subscription",))
def create_schedule(st, params):
    """Only ``from_subscription``: a schedule made with its own phases starts a new subscription, not modelled."""
    sub = st.get("subscriptions", params["from_subscription"], "from_subscription")
    return render(st, models.from_subscription(st, sub), params.get("expand"))


@bp.get("/v1/subscription_schedules/<sched_id>")
@endpoint()
def retrieve_schedule(st, params, sched_id):
    return render(st, st.get("subscription_schedules", sched_id), params.get("expand"))


@bp.get("/v1/subscription_schedules")
@endpoint()
def list_schedules(st, params):
    found = newest_first(st.subscription_schedules.values())
    if params.get("customer"):
        found = [sched for sched in found if sched["customer"] == params["customer"]]
    page = paginate(found, params, "/v1/subscription_schedules")
    page["data"] = [render(st, sched, strip_data(params.get("expand"))) for sched in page["data"]]
    return page


@bp.post("/v1/subscription_schedules/<sched_id>")
@endpoint()
def update_schedule(st, params, sched_id):
    sched = st.get("subscription_schedules", sched_id)
    return render(st, models.update(st, sched, _subscription(st, sched), params), params.get("expand"))


@bp.post("/v1/subscription_schedules/<sched_id>/release")
@endpoint()
def release_schedule(st, params, sched_id):
    sched = st.get("subscription_schedules", sched_id)
    return render(st, models.release(st, sched, _subscription(st, sched)), params.get("expand"))


@bp.post("/v1/subscription_schedules/<sched_id>/cancel")
@endpoint()
def cancel_schedule(st, params, sched_id):
    """"Cancels a subscription schedule and its associated subscription immediately (if the subscription
    schedule has an active subscription)" (https://docs.stripe.com/api/subscription_schedules/cancel)."""
    sched = st.get("subscription_schedules", sched_id)
    if sched["status"] not in ("not_started", "active"):
        raise StripeError(400, f"You cannot cancel a subscription schedule that is currently in the "
                          f"`{sched['status']}` status. It must be in `not_started` or `active`.")
    sub = _subscription(st, sched)
    sched.update(status="canceled", canceled_at=st.now(), current_phase=None)
    st.emit("subscription_schedule.canceled", sched)
    if sub is not None and sub["status"] not in models.ENDED:
        prorations.cancel_prorations(st, sub, params.get("prorate", True), bool(params.get("invoice_now", True)))
        cancel_now(st, sub)
    return render(st, sched, params.get("expand"))
