"""``/v1/customers`` and ``/v1/payment_methods`` routes."""

from __future__ import annotations

from flask import Blueprint

from ..billing import cards
from ..core.expand import render
from ..core.http import endpoint
from ..core.lists import newest_first, paginate
from ..core.store import StripeError
from ..subscriptions.models import cancel_now
from . import models, payment_methods, tax_ids

bp = Blueprint("stripe_customers", __name__)

@bp.post("/v1/customers")
@endpoint()
def create_customer(st, params):
    if params.get("test_clock"):
        st.get("test_clocks", params["test_clock"], "test_clock")
    cus = models.customer(st, params)
    models.apply_details(cus, params)
    st.customers[cus["id"]] = cus
    settings = dict(params.get("invoice_settings") or {})
    if params.get("payment_method"):
        pm = payment_methods.attach_pm(st, payment_methods.resolve_pm(st, params["payment_method"]), cus["id"])
        if settings.get("default_payment_method") == params["payment_method"]:
            settings["default_payment_method"] = pm["id"]  # same test id: same new pm_
    if settings.get("default_payment_method"):
        cus["invoice_settings"]["default_payment_method"] = payment_methods.customer_pm(
            st, cus["id"], settings["default_payment_method"],
            "invoice_settings[default_payment_method]")
    st.emit("customer.created", cus)
    return render(st, cus, params.get("expand"))


@bp.get("/v1/customers/<cus_id>")
@endpoint()
def retrieve_customer(st, params, cus_id):
    cus = st.get("customers", cus_id)
    if cus.get("_deleted"):
        return {"id": cus_id, "object": "customer", "deleted": True}
    return render(st, cus, params.get("expand"))


@bp.post("/v1/customers/<cus_id>")
@endpoint()
def update_customer(st, params, cus_id):
    cus = models.live_customer(st, cus_id)
    models.update(st, cus, params)
    return render(st, cus, params.get("expand"))


@bp.delete("/v1/customers/<cus_id>")
@endpoint()
def delete_customer(st, params, cus_id):
    cus = models.live_customer(st, cus_id)
    # Deleting a customer cancels its subscriptions immediately, as Stripe does.
    for sub in list(st.subscriptions.values()):
        if sub["customer"] == cus_id and sub["status"] not in ("canceled",
                                                               "incomplete_expired"):
            cancel_now(st, sub)
    cus["_deleted"] = True
    st.emit("customer.deleted", cus)
    return {"id": cus_id, "object": "customer", "deleted": True}


@bp.post("/v1/customers/<cus_id>/tax_ids")
@endpoint(required=("type", "value"))
def create_tax_id(st, params, cus_id):
    return render(st, tax_ids.create(st, models.live_customer(st, cus_id), params), params.get("expand"))


@bp.get("/v1/customers/<cus_id>/tax_ids")
@endpoint()
def list_tax_ids(st, params, cus_id):
    cus = models.live_customer(st, cus_id)
    found = newest_first([t for t in st.tax_ids.values() if t["customer"] == cus["id"]])
    return paginate(found, params, f"/v1/customers/{cus_id}/tax_ids")


@bp.get("/v1/customers/<cus_id>/tax_ids/<tax_id_id>")
@endpoint()
def retrieve_tax_id(st, params, cus_id, tax_id_id):
    return render(st, tax_ids.of_customer(st, models.live_customer(st, cus_id), tax_id_id), params.get("expand"))


@bp.delete("/v1/customers/<cus_id>/tax_ids/<tax_id_id>")
@endpoint()
def delete_tax_id(st, params, cus_id, tax_id_id):
    return tax_ids.delete(st, tax_ids.of_customer(st, models.live_customer(st, cus_id), tax_id_id))


@bp.get("/v1/payment_methods/<pm_id>")
@endpoint()
def retrieve_payment_method(st, params, pm_id):
    return render(st, payment_methods.resolve_pm(st, pm_id, "id"), params.get("expand"))


@bp.post("/v1/payment_methods/<pm_id>/attach")
@endpoint(required=("customer",))
def attach_payment_method(st, params, pm_id):
    cus = models.live_customer(st, params["customer"], "customer")
    pm = payment_methods.resolve_pm(st, pm_id, "payment_method")
    return render(st, payment_methods.attach_pm(st, pm, cus["id"]), params.get("expand"))


@bp.post("/v1/payment_methods/<pm_id>/detach")
@endpoint()
def detach_payment_method(st, params, pm_id):
    pm = st.get("payment_methods", pm_id, "payment_method")
    return render(st, payment_methods.detach_pm(st, pm), params.get("expand"))


def _list_customer_pms(st, params, cus_id, url):
    models.live_customer(st, cus_id, "customer")
    pms = [pm for pm in newest_first(st.payment_methods.values()) if pm["customer"] == cus_id]
    if params.get("type"):
        pms = [pm for pm in pms if pm["type"] == params["type"]]
    page = paginate(pms, params, url)
    page["data"] = [render(st, pm) for pm in page["data"]]
    return page


@bp.get("/v1/payment_methods")
@endpoint(required=("customer",))
def list_payment_methods(st, params):
    return _list_customer_pms(st, params, params["customer"], "/v1/payment_methods")


@bp.get("/v1/customers/<cus_id>/payment_methods")
@endpoint()
def list_customer_payment_methods(st, params, cus_id):
    return _list_customer_pms(st, params, cus_id, f"/v1/customers/{cus_id}/payment_methods")


def _card_field(card: dict, key: str, low: int, high: int) -> int:
    value = card.get(key)
    if not str(value or "").isdigit() or not low <= int(value) <= high:
        raise StripeError(400, f"Your card's {key.replace('_', ' ')} is invalid.", type="card_error",
                          code=f"invalid_{key.replace('exp_', 'expiry_')}", param=f"card[{key}]")
    return int(value)


@bp.post("/v1/payment_methods")
@endpoint(required=("type", "card"))
def create_payment_method(st, params):
    """A card PaymentMethod from a Stripe test number and the expiry asked for (raw card data)."""
    card = params["card"]
    if "token" in card:
        if card["token"] not in cards.TEST_CARD_TOKENS:
            raise StripeError(400, f"No such token: '{card['token']}'", code="resource_missing", param="card[token]")
        pm = payment_methods.payment_method(st, cards.TEST_CARD_TOKENS[card["token"]])
    elif params["type"] != "card" or card.get("number") not in cards.TEST_CARD_NUMBERS:
        raise StripeError(402, "Your card number is incorrect.", type="card_error",
                          code="incorrect_number", param="card[number]")
    else:
        pm = payment_methods.payment_method(st, cards.TEST_CARD_NUMBERS[card["number"]],
                                            exp_month=_card_field(card, "exp_month", 1, 12),
                                            exp_year=_card_field(card, "exp_year", 2000, 2100))
    st.payment_methods[pm["id"]] = pm
    return render(st, pm, params.get("expand"))
