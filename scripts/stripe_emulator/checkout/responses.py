"""``/v1/checkout/sessions`` routes and the hosted page a browser completes, ``/checkout/<id>``.

The page takes a test card id (``pm_card_visa``, ...), the card's billing country and postal code
(optional) and, when the session allows it, a promotion code as typed; paying redirects to the
session's ``success_url``. No auth: the session id is the capability, as Stripe's URLs are.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from flask import Blueprint, abort, redirect, request

from ..core.expand import render
from ..core.http import endpoint, store
from ..core.lists import newest_first, paginate, strip_data
from ..core.store import StripeError
from . import models

bp = Blueprint("stripe_checkout", __name__)

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Checkout (Stripe emulator)</title></head>
<body><h1>Subscribe</h1>{flash}<p>{lines}</p>
<form method="post" action="/checkout/{id}"><select name="payment_method">
<option>pm_card_visa</option><option>pm_card_mastercard</option><option>pm_card_chargeDeclined</option>
</select><input name="country" placeholder="Country (DE)"><input name="postal_code" placeholder="Postal code">
{code}<button type="submit">Subscribe</button></form>
<p><a href="{cancel}">Cancel</a></p></body></html>"""


@bp.post("/v1/checkout/sessions")
@endpoint(required=("mode",))
def create_session(st, params):
    return render(st, models.create_session(st, params), params.get("expand"))


@bp.get("/v1/checkout/sessions/<session_id>")
@endpoint()
def retrieve_session(st, params, session_id):
    return render(st, models.expire_if_due(st, st.get("checkout_sessions", session_id)), params.get("expand"))


@bp.post("/v1/checkout/sessions/<session_id>/expire")
@endpoint()
def expire_session(st, params, session_id):
    return render(st, models.expire(st, st.get("checkout_sessions", session_id)), params.get("expand"))


@bp.get("/v1/checkout/sessions")
@endpoint()
def list_sessions(st, params):
    sessions = [models.expire_if_due(st, s) for s in newest_first(st.checkout_sessions.values())]
    for key in ("customer", "status", "subscription"):
        if params.get(key):
            sessions = [s for s in sessions if s[key] == params[key]]
    page = paginate(sessions, params, "/v1/checkout/sessions")
    page["data"] = [render(st, s, strip_data(params.get("expand"))) for s in page["data"]]
    return page


def _open_session(session_id: str) -> dict:
    session = store().checkout_sessions.get(session_id)
    if session is None:
        abort(404)
    return session


@bp.get("/checkout/<session_id>")
def page(session_id):
    st = store()
    with st.lock:
        session = models.expire_if_due(st, _open_session(session_id))
        if session["status"] != "open":
            return redirect(session["success_url"], code=303)
        lines = ", ".join(f"{item['quantity']} × {escape(item['price'])}" for item in session["_line_items"])
        code = '<input name="promotion_code" placeholder="Promotion code">' if session["allow_promotion_codes"] else ""
        return PAGE.format(id=escape(session_id), lines=lines, code=code, cancel=escape(session["cancel_url"] or ""),
                           flash=f"<p><b>{escape(request.args['error'])}</b></p>" if request.args.get("error") else "")


@bp.post("/checkout/<session_id>")
def pay(session_id):
    st = store()
    with st.lock:
        session = _open_session(session_id)
        typed = (request.form.get("promotion_code") or "").strip()
        promo = next((p for p in st.promotion_codes.values() if p["active"] and p["code"].lower() == typed.lower()),
                     None) if typed and session["allow_promotion_codes"] else None
        if typed and promo is None:
            return redirect(f"/checkout/{session_id}?error={quote('This code is not valid.')}", code=303)
        try:
            with st.on_clock(st.clock_of(session["customer"])):  # a test clock's customer pays in its time
                address = {key: request.form[key].strip() for key in ("country", "postal_code")
                           if request.form.get(key, "").strip()}
                models.complete(st, session, request.form.get("payment_method") or "pm_card_visa",
                                promo["id"] if promo else None, address or None)
        except StripeError as err:
            return redirect(f"/checkout/{session_id}?error={quote(err.body['message'])}", code=303)
        return redirect(session["success_url"], code=303)
