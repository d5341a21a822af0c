"""``/v1`` routes for catalog, customers, payment methods, webhook endpoints and events.

Subscriptions, invoices, PaymentIntents and portal sessions are in ``api_billing.py``.
Handlers receive the decoded params and run under the store lock (see ``plumbing.py``).
"""

from __future__ import annotations

from flask import Blueprint

from . import billing, lifecycle, objects
from .expand import render
from .plumbing import endpoint, paginate, to_bool
from .state import StripeError, public

bp = Blueprint("stripe_api", __name__)


def newest_first(objs) -> list[dict]:
    # Ties on ``created`` (one-second resolution) fall back to insertion order.
    return [o for _, o in sorted(enumerate(objs), key=lambda p: (p[1]["created"], p[0]),
                                 reverse=True)]


# -- products and prices -------------------------------------------------------

@bp.post("/v1/products")
@endpoint({"name", "id", "description", "metadata", "active"}, required=("name",))
def create_product(st, params):
    return render(st, _add_product(st, params), params.get("expand"))


def _add_product(st, params):
    prod = objects.product(st, params)
    st.products[prod["id"]] = prod
    st.emit("product.created", prod)
    return prod


@bp.get("/v1/products/<prod_id>")
@endpoint()
def retrieve_product(st, params, prod_id):
    return render(st, st.get("products", prod_id), params.get("expand"))


@bp.post("/v1/prices")
@endpoint({"product", "product_data", "unit_amount", "currency", "recurring", "lookup_key",
           "metadata", "nickname", "active", "transfer_lookup_key"},
          required=("currency", "unit_amount"))
def create_price(st, params):
    if params.get("product"):
        product_id = st.get("products", params["product"], "product")["id"]
    elif params.get("product_data"):
        product_id = _add_product(st, params["product_data"])["id"]
    else:
        raise StripeError(400, "You must specify either `product` or `product_data` when "
                          "creating a price.", param="product")
    if params.get("lookup_key"):
        for other in st.prices.values():
            if other["lookup_key"] == params["lookup_key"]:
                if not to_bool(params.get("transfer_lookup_key")):
                    raise StripeError(400, f"A price (`{other['id']}`) already uses that "
                                      "lookup key.", param="lookup_key")
                other["lookup_key"] = None
    p = objects.price(st, params, product_id)
    st.prices[p["id"]] = p
    st.emit("price.created", p)
    return render(st, p, params.get("expand"))


@bp.get("/v1/prices/<price_id>")
@endpoint()
def retrieve_price(st, params, price_id):
    return render(st, st.get("prices", price_id), params.get("expand"))


@bp.get("/v1/prices")
@endpoint({"active", "currency", "product", "lookup_keys", "type", "limit",
           "starting_after", "ending_before", "recurring"})
def list_prices(st, params):
    prices = newest_first(st.prices.values())
    if params.get("product"):
        prices = [p for p in prices if p["product"] == params["product"]]
    if params.get("lookup_keys"):
        prices = [p for p in prices if p["lookup_key"] in params["lookup_keys"]]
    if "active" in params:
        prices = [p for p in prices if p["active"] == to_bool(params["active"])]
    if params.get("type"):
        prices = [p for p in prices if p["type"] == params["type"]]
    page = paginate(prices, params, "/v1/prices")
    page["data"] = [render(st, p, _strip_data(params.get("expand"))) for p in page["data"]]
    return page


def _strip_data(expand):
    """List endpoints take ``expand[]=data.x``; each element then expands ``x``."""
    return [e[5:] for e in (expand or []) if e.startswith("data.")]


# -- customers -----------------------------------------------------------------

CUSTOMER_PARAMS = {"email", "name", "metadata", "description", "phone", "invoice_settings",
                   "payment_method"}


@bp.post("/v1/customers")
@endpoint(CUSTOMER_PARAMS)
def create_customer(st, params):
    cus = objects.customer(st, params)
    st.customers[cus["id"]] = cus
    settings = dict(params.get("invoice_settings") or {})
    if params.get("payment_method"):
        pm = billing.attach_pm(st, billing.resolve_pm(st, params["payment_method"]), cus["id"])
        if settings.get("default_payment_method") == params["payment_method"]:
            settings["default_payment_method"] = pm["id"]  # same test id: same new pm_
    if settings.get("default_payment_method"):
        cus["invoice_settings"]["default_payment_method"] = billing.customer_pm(
            st, cus["id"], settings["default_payment_method"],
            "invoice_settings[default_payment_method]")
    st.emit("customer.created", cus)
    return render(st, cus, params.get("expand"))


def _live_customer(st, cus_id, param="id"):
    cus = st.get("customers", cus_id, param)
    if cus.get("_deleted"):
        raise StripeError(404, f"No such customer: '{cus_id}'", code="resource_missing",
                          param=param)
    return cus


@bp.get("/v1/customers/<cus_id>")
@endpoint()
def retrieve_customer(st, params, cus_id):
    cus = st.get("customers", cus_id)
    if cus.get("_deleted"):
        return {"id": cus_id, "object": "customer", "deleted": True}
    return render(st, cus, params.get("expand"))


def _update_customer(st, cus, params):
    before = public(cus)
    for key in ("email", "name", "description", "phone"):
        if key in params:
            cus[key] = params[key] or None
    if "metadata" in params:
        lifecycle.merge_metadata(cus, params["metadata"])
    settings = params.get("invoice_settings") or {}
    if "default_payment_method" in settings:
        pm_id = settings["default_payment_method"]
        cus["invoice_settings"]["default_payment_method"] = billing.customer_pm(
            st, cus["id"], pm_id, "invoice_settings[default_payment_method]") if pm_id else None
    st.emit("customer.updated", cus, before)


@bp.post("/v1/customers/<cus_id>")
@endpoint(CUSTOMER_PARAMS - {"payment_method"})
def update_customer(st, params, cus_id):
    cus = _live_customer(st, cus_id)
    _update_customer(st, cus, params)
    return render(st, cus, params.get("expand"))


@bp.delete("/v1/customers/<cus_id>")
@endpoint(set())
def delete_customer(st, params, cus_id):
    cus = _live_customer(st, cus_id)
    # Deleting a customer cancels its subscriptions immediately, as Stripe does.
    for sub in list(st.subscriptions.values()):
        if sub["customer"] == cus_id and sub["status"] not in ("canceled",
                                                               "incomplete_expired"):
            billing.cancel_now(st, sub)
    cus["_deleted"] = True
    st.emit("customer.deleted", cus)
    return {"id": cus_id, "object": "customer", "deleted": True}


# -- payment methods -------------------------------------------------------------

@bp.get("/v1/payment_methods/<pm_id>")
@endpoint()
def retrieve_payment_method(st, params, pm_id):
    return render(st, billing.resolve_pm(st, pm_id, "id"), params.get("expand"))


@bp.post("/v1/payment_methods/<pm_id>/attach")
@endpoint({"customer"}, required=("customer",))
def attach_payment_method(st, params, pm_id):
    cus = _live_customer(st, params["customer"], "customer")
    pm = billing.resolve_pm(st, pm_id, "payment_method")
    return render(st, billing.attach_pm(st, pm, cus["id"]), params.get("expand"))


@bp.post("/v1/payment_methods/<pm_id>/detach")
@endpoint(set())
def detach_payment_method(st, params, pm_id):
    pm = st.get("payment_methods", pm_id, "payment_method")
    return render(st, billing.detach_pm(st, pm), params.get("expand"))


def _list_customer_pms(st, params, cus_id, url):
    _live_customer(st, cus_id, "customer")
    pms = [pm for pm in newest_first(st.payment_methods.values()) if pm["customer"] == cus_id]
    if params.get("type"):
        pms = [pm for pm in pms if pm["type"] == params["type"]]
    page = paginate(pms, params, url)
    page["data"] = [render(st, pm) for pm in page["data"]]
    return page


@bp.get("/v1/payment_methods")
@endpoint({"customer", "type", "limit", "starting_after", "ending_before"},
          required=("customer",))
def list_payment_methods(st, params):
    return _list_customer_pms(st, params, params["customer"], "/v1/payment_methods")


@bp.get("/v1/customers/<cus_id>/payment_methods")
@endpoint({"type", "limit", "starting_after", "ending_before", "allow_redisplay"})
def list_customer_payment_methods(st, params, cus_id):
    return _list_customer_pms(st, params, cus_id, f"/v1/customers/{cus_id}/payment_methods")


# -- webhook endpoints and events --------------------------------------------------

WE_PARAMS = {"url", "enabled_events", "description", "metadata", "api_version", "connect",
             "disabled"}


def _render_endpoint(we, with_secret=False):
    out = public(we)
    if with_secret:  # Stripe reveals the signing secret only in the create response.
        out["secret"] = we["_secret"]
    return out


@bp.post("/v1/webhook_endpoints")
@endpoint(WE_PARAMS - {"disabled"}, required=("url", "enabled_events"))
def create_webhook_endpoint(st, params):
    if isinstance(params["enabled_events"], str):
        params["enabled_events"] = [params["enabled_events"]]
    we = objects.webhook_endpoint(st, params)
    st.webhook_endpoints[we["id"]] = we
    return _render_endpoint(we, with_secret=True)


@bp.get("/v1/webhook_endpoints/<we_id>")
@endpoint()
def retrieve_webhook_endpoint(st, params, we_id):
    return _render_endpoint(st.get("webhook_endpoints", we_id))


@bp.post("/v1/webhook_endpoints/<we_id>")
@endpoint(WE_PARAMS - {"api_version", "connect"})
def update_webhook_endpoint(st, params, we_id):
    we = st.get("webhook_endpoints", we_id)
    if "url" in params:
        we["url"] = params["url"]
    if "enabled_events" in params:
        events = params["enabled_events"]
        we["enabled_events"] = [events] if isinstance(events, str) else list(events)
    if "disabled" in params:
        we["status"] = "disabled" if to_bool(params["disabled"]) else "enabled"
    if "description" in params:
        we["description"] = params["description"] or None
    if "metadata" in params:
        lifecycle.merge_metadata(we, params["metadata"])
    return _render_endpoint(we)


@bp.delete("/v1/webhook_endpoints/<we_id>")
@endpoint(set())
def delete_webhook_endpoint(st, params, we_id):
    st.get("webhook_endpoints", we_id)
    del st.webhook_endpoints[we_id]
    return {"id": we_id, "object": "webhook_endpoint", "deleted": True}


@bp.get("/v1/webhook_endpoints")
@endpoint({"limit", "starting_after", "ending_before"})
def list_webhook_endpoints(st, params):
    page = paginate(newest_first(st.webhook_endpoints.values()), params,
                    "/v1/webhook_endpoints")
    page["data"] = [_render_endpoint(we) for we in page["data"]]
    return page


@bp.get("/v1/events/<evt_id>")
@endpoint()
def retrieve_event(st, params, evt_id):
    return public(st.get("events", evt_id))


@bp.get("/v1/events")
@endpoint({"type", "types", "limit", "starting_after", "ending_before", "created",
           "delivery_success"})
def list_events(st, params):
    events = sorted(st.events.values(), key=lambda e: e["_seq"], reverse=True)
    types = params.get("types") or ([params["type"]] if params.get("type") else None)
    if types:
        def wanted(t):  # Stripe accepts a trailing wildcard, e.g. customer.subscription.*
            return any(t == p or (p.endswith("*") and t.startswith(p[:-1])) for p in types)
        events = [e for e in events if wanted(e["type"])]
    page = paginate(events, params, "/v1/events")
    page["data"] = [public(e) for e in page["data"]]
    return page
