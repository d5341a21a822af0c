"""``/_emulator/*`` control endpoints (JSON in/out, no auth) for tests and demos.

They drive what a real Stripe account would do on its own: time passing (renewals,
trial ends, scheduled cancellations), failing renewals, webhook delivery quirks
(pause, flush, reorder, duplicate) and API faults (errors, slowness).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from .checkout import models as checkout
from .core.http import store
from .core.store import StripeError, public
from .test_clocks import models as clocks

bp = Blueprint("stripe_control", __name__, url_prefix="/_emulator")


def _delivery():
    return current_app.extensions["stripe_emulator"]["delivery"]


def _body() -> dict:
    return request.get_json(silent=True) or {}


def _bad(message: str, status: int = 400):
    return jsonify({"error": message}), status


@bp.post("/reset")
def reset():
    store().reset()
    return jsonify({"reset": True, "clock": store().now()})


@bp.get("/clock")
def clock():
    st = store()
    with st.lock:
        return jsonify({"now": st.now(), "offset_seconds": st.clock_offset})


@bp.post("/clock/advance")
def advance():
    seconds = _body().get("seconds")
    if not isinstance(seconds, (int, float)) or seconds < 0:
        return _bad("'seconds' must be a non-negative number")
    st = store()
    with st.lock:
        processed = clocks.advance(st, seconds)
        return jsonify({"now": st.now(), "offset_seconds": st.clock_offset,
                        "processed": processed})


@bp.post("/clock/rewind")
def rewind():
    """Set the clock back to an earlier offset (default 0, real time); nothing that happened is undone.

    For a test or script that moved the clock and must leave it as it found it. Moving forward is
    ``/clock/advance``'s job, since it runs whatever falls due on the way.
    """
    offset = _body().get("offset_seconds", 0)
    st = store()
    with st.lock:
        if not isinstance(offset, (int, float)) or not 0 <= offset <= st.clock_offset:
            return _bad(f"'offset_seconds' must be a number from 0 to the current offset {st.clock_offset}")
        st.clock_offset = float(offset)
        return jsonify({"now": st.now(), "offset_seconds": st.clock_offset})


@bp.post("/customers/<customer_id>/test_clock")
def put_on_test_clock(customer_id):
    """Move an existing customer, with its subscriptions and invoices, onto a test clock.

    Stripe sets a customer's clock only when it creates it; ``make demo`` uses this for the customer the
    service created, so that advancing the demo's clock moves nobody else's subscriptions.
    """
    clock_id = _body().get("test_clock")
    st = store()
    with st.lock:
        customer = st.customers.get(customer_id)
        if customer is None or clock_id not in st.test_clocks:
            return _bad(f"no such customer {customer_id!r} or test clock {clock_id!r}", 404)
        customer["test_clock"] = clock_id
        for obj in (*st.subscriptions.values(), *st.invoices.values()):
            if obj["customer"] == customer_id:
                obj["test_clock"] = clock_id
        return jsonify(public(customer))


@bp.post("/fail_next_renewal")
def fail_next_renewal():
    sub_id = _body().get("subscription")
    st = store()
    with st.lock:
        if sub_id not in st.subscriptions:
            return _bad(f"no such subscription: {sub_id!r}", 404)
        st.fail_next_renewal.add(sub_id)
        return jsonify({"subscription": sub_id, "fail_next_renewal": True})


@bp.get("/delivery")
def delivery():
    return jsonify(_delivery().snapshot())


@bp.post("/delivery/pause")
def pause():
    _delivery().set_paused(True)
    return jsonify({"paused": True})


@bp.post("/delivery/resume")
def resume():
    _delivery().set_paused(False)
    return jsonify({"paused": False})


@bp.post("/delivery/flush")
def flush():
    return jsonify(_delivery().flush())


def _count() -> int | None:
    count = _body().get("count")
    return count if isinstance(count, int) and count >= 0 else None


@bp.post("/delivery/reorder")
def reorder():
    count = _count()
    if count is None:
        return _bad("'count' must be a non-negative integer")
    _delivery().reorder(count)
    return jsonify({"reorder": count})


@bp.post("/delivery/duplicate")
def duplicate():
    count = _count()
    if count is None:
        return _bad("'count' must be a non-negative integer")
    _delivery().duplicate(count)
    return jsonify({"duplicate": count})


# The methods the /v1 API answers: a fault naming any other could never match.
_API_METHODS = frozenset({"GET", "POST", "DELETE"})


@bp.post("/faults")
def add_fault():
    body = _body()
    method = body.get("method")
    if method is not None and (not isinstance(method, str) or method.upper() not in _API_METHODS):
        return _bad(f"'method' must be one of {', '.join(sorted(_API_METHODS))}, or null for any")
    fault = {"path_prefix": body.get("path_prefix") or "/v1/", "method": method.upper() if method else None,
             "status": body.get("status"), "count": body.get("count", 1),
             "delay_seconds": float(body.get("delay_seconds") or 0),
             "probability": float(body.get("probability", 1)), "after": bool(body.get("after"))}
    if fault["status"] is not None and not isinstance(fault["status"], int):
        return _bad("'status' must be an integer HTTP status")
    if not isinstance(fault["count"], int) or fault["count"] < 1:
        return _bad("'count' must be a positive integer")
    if not 0 < fault["probability"] <= 1:
        return _bad("'probability' must be a number in (0, 1]")
    st = store()
    with st.lock:
        st.faults.append(fault)
        return jsonify({"faults": list(st.faults)})


@bp.get("/faults")
def list_faults():
    st = store()
    with st.lock:
        return jsonify({"faults": list(st.faults)})


@bp.delete("/faults")
def clear_faults():
    st = store()
    with st.lock:
        st.faults.clear()
        return jsonify({"faults": []})


@bp.post("/checkout_sessions/<session_id>/complete")
def complete_checkout(session_id):
    """``{"payment_method": "pm_card_visa", "address": {"country", "postal_code"}?}``: complete the open session as its
    hosted page would (the address the customer enters); the session."""
    st = store()
    with st.lock:
        session = st.checkout_sessions.get(session_id)
        if session is None:
            return _bad(f"No such checkout session: {session_id}", 404)
        try:
            with st.on_clock(st.clock_of(session["customer"])):  # a test clock's customer pays in its time
                checkout.complete(st, session, _body().get("payment_method") or "pm_card_visa",
                                  address=_body().get("address"))
        except StripeError as err:
            return jsonify(err.response_body()), err.status
        return jsonify(public(session))


@bp.get("/requests")
def api_requests():
    """``{"total": N, "by_resource": {"GET /v1/customers": n, ...}}``: API requests served since the reset."""
    st = store()
    with st.lock:
        return jsonify({"total": sum(st.api_requests.values()), "by_resource": dict(st.api_requests)})


@bp.get("/state")
def state():
    st = store()
    with st.lock:
        return jsonify({
            "now": st.now(),
            "customers": [public(c) | {"deleted": bool(c.get("_deleted"))}
                          for c in st.customers.values()],
            "subscriptions": [public(s) for s in st.subscriptions.values()],
            "webhook_endpoints": [public(w) for w in st.webhook_endpoints.values()],
            "events_count": len(st.events),
            "event_types": [e["type"] for e in sorted(st.events.values(),
                                                       key=lambda e: e["_seq"])],
            "faults": list(st.faults),
        })
