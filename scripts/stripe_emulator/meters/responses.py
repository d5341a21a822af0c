"""``/v1/billing/meters``, ``/v1/billing/meters/{id}/event_summaries`` and ``/v1/billing/meter_events`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..core.http import endpoint
from ..core.lists import newest_first, paginate
from . import models

bp = Blueprint("stripe_meters", __name__)


@bp.post("/v1/billing/meters")
@endpoint()
def create_meter(st, params):
    return models.create_meter(st, params)


@bp.get("/v1/billing/meters")
@endpoint()
def list_meters(st, params):
    meters = newest_first(st.meters.values())
    if params.get("status"):
        meters = [m for m in meters if m["status"] == params["status"]]
    return paginate(meters, params, "/v1/billing/meters")


@bp.get("/v1/billing/meters/<meter_id>")
@endpoint()
def retrieve_meter(st, params, meter_id):
    return st.get("meters", meter_id)


@bp.post("/v1/billing/meters/<meter_id>")
@endpoint()
def update_meter(st, params, meter_id):
    meter = st.get("meters", meter_id)
    if "display_name" in params:
        meter.update(display_name=params["display_name"], updated=st.now())
    return meter


@bp.post("/v1/billing/meters/<meter_id>/deactivate")
@endpoint()
def deactivate_meter(st, params, meter_id):
    return models.set_status(st, st.get("meters", meter_id), active=False)


@bp.post("/v1/billing/meters/<meter_id>/reactivate")
@endpoint()
def reactivate_meter(st, params, meter_id):
    return models.set_status(st, st.get("meters", meter_id), active=True)


@bp.get("/v1/billing/meters/<meter_id>/event_summaries")
@endpoint()
def list_event_summaries(st, params, meter_id):
    found = models.summaries(st, st.get("meters", meter_id), params)
    return paginate(found, params, f"/v1/billing/meters/{meter_id}/event_summaries")


@bp.post("/v1/billing/meter_events")
@endpoint()
def create_meter_event(st, params):
    return models.record_event(st, params)
