"""A minimal hosted billing portal: ``/portal/<session id>``.

The page lists the customer's subscriptions with plain HTML forms. Each form action
changes state through the same code as the API (so it emits the same events with the
same ``previous_attributes``) and redirects back to the page with 303. Tests can POST
the forms directly; no auth, the session id is the capability, as on Stripe.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from flask import Blueprint, abort, redirect, request

from ..core.http import store
from ..core.store import DEFAULT_API_VERSION, StripeError, new_id
from ..schedules import portal_changes
from ..subscriptions import models as subscriptions
from . import portal_configurations

bp = Blueprint("stripe_portal", __name__)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Billing portal (Stripe emulator)</title></head>
<body><h1>Billing portal</h1><p>Customer {customer}{email}</p>{flash}{subs}
<p><a href="{return_url}">Return</a></p></body></html>"""


def _session(session_id: str) -> dict:
    session = store().portal_sessions.get(session_id)
    if session is None:
        abort(404)
    return session


def _form(action: str, label: str, extra: str = "") -> str:
    return (f'<form method="post" action="{escape(action)}" style="display:inline">{extra}'
            f'<button type="submit">{escape(label)}</button></form> ')


def _config(st, session: dict) -> dict:
    return st.portal_configurations[session["configuration"]]


def _render_sub(st, session_id: str, sub: dict) -> str:
    base = f"/portal/{session_id}/subscriptions/{sub['id']}"
    item = sub["items"]["data"][0]
    p = item["price"]
    lines = [f'<li id="{sub["id"]}"><b>{escape(sub["id"])}</b> status <b>{sub["status"]}</b> '
             f'price {escape(p["id"])} ({p["unit_amount"]} {p["currency"]}/'
             f'{(p["recurring"] or {}).get("interval")}) period ends '
             f'{item["current_period_end"]}'
             + (" &mdash; cancels at period end" if sub["cancel_at_period_end"] else "")
             + (f" &mdash; on schedule {escape(sub['schedule'])}" if sub["schedule"] else "")
             + "<br>"]
    if sub["status"] in ("canceled", "incomplete_expired"):
        return "".join(lines) + "</li>"
    config = _config(st, store().portal_sessions[session_id])
    cancel = config["features"]["subscription_cancel"]
    if sub["cancel_at_period_end"]:
        lines.append(_form(f"{base}/resume", "Resume subscription"))
    elif cancel["enabled"] and cancel["mode"] == "at_period_end":
        lines.append(_form(f"{base}/cancel_at_period_end", "Cancel at period end"))
    if cancel["enabled"] and cancel["mode"] == "immediately":
        lines.append(_form(f"{base}/cancel", "Cancel now"))
    offered = portal_configurations.offered_prices(st, config)
    if offered is not None:
        options = "".join(
            f'<option value="{escape(q["id"])}"{" selected" if q["id"] == p["id"] else ""}>'
            f'{escape(q["lookup_key"] or q["id"])} ({q["unit_amount"]} {q["currency"]})</option>' for q in offered)
        lines.append(_form(f"{base}/swap", "Change plan", f'<select name="price">{options}</select>'))
    return "".join(lines) + "</li>"


@bp.get("/portal/<session_id>")
def page(session_id):
    st = store()
    with st.lock:
        session = _session(session_id)
        cus = st.customers.get(session["customer"]) or {}
        subs = [s for s in st.subscriptions.values() if s["customer"] == session["customer"]]
        body = "".join(_render_sub(st, session_id, s) for s in subs) or "<li>none</li>"
        return PAGE.format(
            customer=escape(session["customer"]),
            email=f" ({escape(cus['email'])})" if cus.get("email") else "",
            flash=f"<p><b>{escape(request.args['error'])}</b></p>"
            if request.args.get("error") else "",
            subs=f"<ul>{body}</ul>", return_url=escape(session["return_url"] or "#"))


@bp.post("/portal/<session_id>/subscriptions/<sub_id>/<action>")
def act(session_id, sub_id, action):
    st = store()
    with st.lock, st.on_clock(st.clock_of(sub_id)):  # a test clock's customer acts in its time
        session = _session(session_id)
        sub = st.subscriptions.get(sub_id)
        if sub is None or sub["customer"] != session["customer"]:
            abort(404)
        # Portal changes are not API requests: their events carry no idempotency key.
        st.request_ctx = {"id": new_id("req_", 14), "idempotency_key": None,
                          "api_version": DEFAULT_API_VERSION}
        try:
            _act(st, _config(st, session), sub, action)
        except StripeError as err:
            return redirect(f"/portal/{session_id}?error={quote(str(err))}", code=303)
        finally:
            st.request_ctx = {"id": None, "idempotency_key": None,
                              "api_version": DEFAULT_API_VERSION}
    return redirect(f"/portal/{session_id}", code=303)


def _act(st, config: dict, sub: dict, action: str) -> None:
    """Do what the page's form asks, as far as the session's configuration allows (else a 403 page).

    The configuration is the rule, not only what the page shows: a form posted by hand for a hidden
    action or a price not offered is refused, as on Stripe's portal. A plan change its
    ``schedule_at_period_end`` conditions hold for waits for the period's end (``schedules/portal_changes.py``).
    """
    cancel = config["features"]["subscription_cancel"]
    if action == "cancel_at_period_end" and cancel["enabled"] and cancel["mode"] == "at_period_end":
        subscriptions.update_subscription(st, sub, {"cancel_at_period_end": True})
    elif action == "resume":
        subscriptions.update_subscription(st, sub, {"cancel_at_period_end": False})
    elif action == "cancel" and cancel["enabled"] and cancel["mode"] == "immediately":
        subscriptions.require_subscription(st, sub["id"])
        subscriptions.cancel_now(st, sub)
    elif action == "swap":
        price = request.form.get("price", "")
        offered = portal_configurations.offered_prices(st, config) or []
        if price not in {p["id"] for p in offered}:
            abort(403)
        update = config["features"]["subscription_update"]
        if portal_changes.at_period_end(st, update, sub, price):
            portal_changes.schedule_change(st, sub, price)
            return
        item = sub["items"]["data"][0]
        subscriptions.update_subscription(st, sub, {"items": [{"id": item["id"], "price": price}],
                                                    "proration_behavior": update["proration_behavior"]})
    else:
        abort(403 if action in ("cancel_at_period_end", "cancel") else 404)
