"""``/v1/test_helpers/test_clocks`` routes: create, retrieve, list, advance, delete."""

from __future__ import annotations

from flask import Blueprint

from ..core.http import endpoint
from ..core.lists import newest_first, paginate
from ..core.store import public
from . import models

bp = Blueprint("stripe_test_clocks", __name__)


@bp.post("/v1/test_helpers/test_clocks")
@endpoint()
def create_test_clock(st, params):
    return public(models.create(st, params))


@bp.get("/v1/test_helpers/test_clocks/<clock_id>")
@endpoint()
def retrieve_test_clock(st, params, clock_id):
    return public(st.get("test_clocks", clock_id))


@bp.get("/v1/test_helpers/test_clocks")
@endpoint()
def list_test_clocks(st, params):
    page = paginate(newest_first(st.test_clocks.values()), params, "/v1/test_helpers/test_clocks")
    page["data"] = [public(clock) for clock in page["data"]]
    return page


@bp.post("/v1/test_helpers/test_clocks/<clock_id>/advance")
@endpoint()
def advance_test_clock(st, params, clock_id):
    return public(models.advance_clock(st, st.get("test_clocks", clock_id), params["frozen_time"]))


@bp.delete("/v1/test_helpers/test_clocks/<clock_id>")
@endpoint()
def delete_test_clock(st, params, clock_id):
    models.delete(st, st.get("test_clocks", clock_id))
    return {"id": clock_id, "object": "test_helpers.test_clock", "deleted": True}
