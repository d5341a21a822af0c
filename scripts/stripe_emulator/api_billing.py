"""``/v1`` routes for subscriptions, invoices, PaymentIntents and billing portal sessions."""

from __future__ import annotations

from flask import Blueprint, request

from . import billing, changes, dunning, lifecycle, objects, trials
from .api import _strip_data, newest_first
from .expand import render
from .plumbing import endpoint, paginate, to_bool
from .state import StripeError, new_id, public

bp = Blueprint("stripe_api_billing", __name__)

SUB_CREATE_PARAMS = {"customer", "items", "payment_behavior", "payment_settings", "metadata",
                     "trial_period_days", "default_payment_method", "description",
                     "off_session", "collection_method", "proration_behavior",
                     "cancel_at_period_end", "trial_settings"}
SUB_UPDATE_PARAMS = {"items", "cancel_at_period_end", "cancel_at", "default_payment_method",
                     "metadata", "proration_behavior", "payment_behavior", "description",
                     "cancellation_details", "payment_settings", "off_session", "proration_date"}
ITEM_PARAMS = {"id", "price", "quantity", "deleted", "metadata"}


def _check_items(params):
    items = params.get("items")
    if items is None:
        return
    if not isinstance(items, list):
        raise StripeError(400, "Invalid array", param="items")
    for i, entry in enumerate(items):
        for key in entry:
            if key not in ITEM_PARAMS:
                raise StripeError(400, f"Received unknown parameter: items[{i}][{key}]",
                                  code="parameter_unknown", param=f"items[{i}][{key}]")


@bp.post("/v1/subscriptions")
@endpoint(SUB_CREATE_PARAMS, required=("customer",))
def create_subscription(st, params):
    _check_items(params)
    sub = billing.create_subscription(st, params)
    if to_bool(params.get("cancel_at_period_end")):
        lifecycle.update_subscription(st, sub, {"cancel_at_period_end": True})
    return render(st, sub, params.get("expand"))


@bp.get("/v1/subscriptions/<sub_id>")
@endpoint()
def retrieve_subscription(st, params, sub_id):
    return render(st, st.get("subscriptions", sub_id), params.get("expand"))


@bp.get("/v1/subscriptions")
@endpoint({"customer", "status", "price", "limit", "starting_after", "ending_before",
           "created", "collection_method"})
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
    page["data"] = [render(st, s, _strip_data(params.get("expand"))) for s in page["data"]]
    return page


@bp.post("/v1/subscriptions/<sub_id>")
@endpoint(SUB_UPDATE_PARAMS)
def update_subscription(st, params, sub_id):
    _check_items(params)
    sub = st.get("subscriptions", sub_id)
    if "cancel_at_period_end" in params:
        params["cancel_at_period_end"] = to_bool(params["cancel_at_period_end"])
    lifecycle.update_subscription(st, sub, params)
    return render(st, sub, params.get("expand"))


@bp.post("/v1/subscriptions/<sub_id>/resume")
@endpoint({"billing_cycle_anchor", "proration_behavior", "proration_date"})
def resume_subscription(st, params, sub_id):
    """A paused subscription starts a new period now, charged at once; see ``trials.resume``."""
    return render(st, trials.resume(st, st.get("subscriptions", sub_id), params), params.get("expand"))


@bp.delete("/v1/subscriptions/<sub_id>")
@endpoint({"invoice_now", "prorate", "cancellation_details"})
def cancel_subscription(st, params, sub_id):
    sub = st.get("subscriptions", sub_id)
    if sub["status"] in ("canceled", "incomplete_expired"):
        raise StripeError(404, f"No such subscription: '{sub_id}'", code="resource_missing",
                          param="id")
    details = params.get("cancellation_details") or {}
    for key in ("comment", "feedback"):
        if details.get(key):
            sub["cancellation_details"][key] = details[key]
    changes.cancel_prorations(st, sub, to_bool(params.get("prorate")), to_bool(params.get("invoice_now")))
    billing.cancel_now(st, sub)
    return render(st, sub, params.get("expand"))


# -- invoices and payment intents ---------------------------------------------------

@bp.get("/v1/invoices/<inv_id>")
@endpoint()
def retrieve_invoice(st, params, inv_id):
    return render(st, st.get("invoices", inv_id), params.get("expand"))


@bp.get("/v1/invoices")
@endpoint({"customer", "subscription", "status", "limit", "starting_after", "ending_before"})
def list_invoices(st, params):
    invs = newest_first(st.invoices.values())
    if params.get("customer"):
        invs = [i for i in invs if i["customer"] == params["customer"]]
    if params.get("subscription"):
        invs = [i for i in invs if i["parent"]["subscription_details"]["subscription"]
                == params["subscription"]]
    if params.get("status"):
        invs = [i for i in invs if i["status"] == params["status"]]
    page = paginate(invs, params, "/v1/invoices")
    page["data"] = [render(st, i, _strip_data(params.get("expand"))) for i in page["data"]]
    return page


@bp.post("/v1/invoices/<inv_id>/pay")
@endpoint({"payment_method", "off_session", "paid_out_of_band", "forgive", "mandate", "source"})
def pay_invoice(st, params, inv_id):
    """Charge an open invoice now (``dunning.pay_invoice``); 402 when the card is declined."""
    inv = st.get("invoices", inv_id)
    return render(st, dunning.pay_invoice(st, inv, params.get("payment_method")), params.get("expand"))


@bp.post("/v1/invoices/create_preview")
@endpoint({"customer", "subscription", "subscription_details", "automatic_tax", "currency",
           "preview_mode"}, required=("subscription",))
def create_invoice_preview(st, params):
    """The invoice a subscription's change or next renewal makes; see ``changes.preview``."""
    return changes.preview(st, params)


@bp.get("/v1/payment_intents/<pi_id>")
@endpoint({"client_secret"})
def retrieve_payment_intent(st, params, pi_id):
    return render(st, st.get("payment_intents", pi_id), params.get("expand"))


@bp.post("/v1/payment_intents/<pi_id>/confirm")
@endpoint({"payment_method", "return_url", "off_session", "setup_future_usage",
           "payment_method_options", "receipt_email", "use_stripe_sdk", "mandate_data",
           "error_on_requires_action", "payment_method_types", "client_secret"})
def confirm_payment_intent(st, params, pi_id):
    pi = st.get("payment_intents", pi_id, "intent")
    billing.confirm_payment_intent(st, pi, params.get("payment_method"))
    return render(st, pi, params.get("expand"))


# -- payment methods from card details ---------------------------------------------

def _card_field(card: dict, key: str, low: int, high: int) -> int:
    value = card.get(key)
    if not str(value or "").isdigit() or not low <= int(value) <= high:
        raise StripeError(400, f"Your card's {key.replace('_', ' ')} is invalid.", type="card_error",
                          code=f"invalid_{key.replace('exp_', 'expiry_')}", param=f"card[{key}]")
    return int(value)


@bp.post("/v1/payment_methods")
@endpoint({"type", "card", "billing_details", "metadata"}, required=("type", "card"))
def create_payment_method(st, params):
    """A card PaymentMethod from a Stripe test number and the expiry asked for (raw card data)."""
    card = params["card"] if isinstance(params["card"], dict) else {}
    if params["type"] != "card" or card.get("number") not in objects.TEST_CARD_NUMBERS:
        raise StripeError(402, "Your card number is incorrect.", type="card_error",
                          code="incorrect_number", param="card[number]")
    pm = objects.payment_method(st, objects.TEST_CARD_NUMBERS[card["number"]],
                                exp_month=_card_field(card, "exp_month", 1, 12),
                                exp_year=_card_field(card, "exp_year", 2000, 2100))
    st.payment_methods[pm["id"]] = pm
    return render(st, pm, params.get("expand"))


# -- billing portal ---------------------------------------------------------------

@bp.post("/v1/billing_portal/sessions")
@endpoint({"customer", "return_url", "configuration", "locale", "on_behalf_of",
           "flow_data"}, required=("customer",))
def create_portal_session(st, params):
    cus = st.get("customers", params["customer"], "customer")
    session_id = new_id("bps_")
    session = {
        "id": session_id, "object": "billing_portal.session",
        "configuration": "bpc_emulator_default", "created": st.now(),
        "customer": cus["id"], "customer_account": None, "flow": None, "livemode": False,
        "locale": params.get("locale"), "on_behalf_of": None,
        "return_url": params.get("return_url"),
        "url": request.host_url.rstrip("/") + f"/portal/{session_id}",
    }
    st.portal_sessions[session_id] = session
    return public(session)
