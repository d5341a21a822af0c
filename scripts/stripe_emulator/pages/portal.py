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
from ..subscriptions import models as subscriptions

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


def _render_sub(st, session_id: str, sub: dict) -> str:
    base = f"/portal/{session_id}/subscriptions/{sub['id']}"
    item = sub["items"]["data"][0]
    p = item["price"]
    lines = [f'<li id="{sub["id"]}"><b>{escape(sub["id"])}</b> status <b>{sub["status"]}</b> '
             f'price {escape(p["id"])} ({p["unit_amount"]} {p["currency"]}/'
             f'{(p["recurring"] or {}).get("interval")}) period ends '
             f'{item["current_period_end"]}'
             + (" &mdash; cancels at period end" if sub["cancel_at_period_end"] else "")
             + "<br>"]
    if sub["status"] in ("canceled", "incomplete_expired"):
        return "".join(lines) + "</li>"
    if sub["cancel_at_period_end"]:
        lines.append(_form(f"{base}/resume", "Resume subscription"))
    else:
        lines.append(_form(f"{base}/cancel_at_period_end", "Cancel at period end"))
    lines.append(_form(f"{base}/cancel", "Cancel now"))
    options = "".join(
        f'<option value="{escape(q["id"])}"{" selected" if q["id"] == p["id"] else ""}>'
        f'{escape(q["lookup_key"] or q["id"])} ({q["unit_amount"]} {q["currency"]})</option>'
        for q in st.prices.values() if q["recurring"] and q["active"])
    lines.append(_form(f"{base}/swap", "Change plan",
                       f'<select name="price">{options}</select>'))
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
    with st.lock:
        session = _session(session_id)
        sub = st.subscriptions.get(sub_id)
        if sub is None or sub["customer"] != session["customer"]:
            abort(404)
        # Portal changes are not API requests: their events carry no idempotency key.
        st.request_ctx = {"id": new_id("req_", 14), "idempotency_key": None,
                          "api_version": DEFAULT_API_VERSION}
        try:
            if action == "cancel_at_period_end":
                subscriptions.update_subscription(st, sub, {"cancel_at_period_end": True})
            elif action == "resume":
                subscriptions.update_subscription(st, sub, {"cancel_at_period_end": False})
            elif action == "cancel":
                subscriptions.require_subscription(st, sub_id)
                subscriptions.cancel_now(st, sub)
            elif action == "swap":
                price = request.form.get("price", "")
                item = sub["items"]["data"][0]
                subscriptions.update_subscription(
                    st, sub, {"items": [{"id": item["id"], "price": price}]})
            else:
                abort(404)
        except StripeError as err:
            return redirect(f"/portal/{session_id}?error={quote(str(err))}", code=303)
        finally:
            st.request_ctx = {"id": None, "idempotency_key": None,
                              "api_version": DEFAULT_API_VERSION}
    return redirect(f"/portal/{session_id}", code=303)
