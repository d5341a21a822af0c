"""The emulator checks every request against the pinned SDK's typed params, as Stripe does (issue 26).

One bad parameter per probe, for each of the 17 operations the service calls, through the real
SDK: Stripe's code and the full ``param`` come back, never a 500. Every shape the SDK types allow
is accepted (the endive resume anchor, ``""`` to unset, booleans and integers as form strings).
"""

from __future__ import annotations

import json
import types
import typing
import urllib.error
import urllib.parse
import urllib.request

import pytest
import stripe
import typing_extensions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scripts.stripe_emulator.app import create_app
from scripts.stripe_emulator.validation.operations import params_type
from scripts.stripe_emulator.validation.types import strict_typeddict
from tests.depth import budget


@pytest.fixture
def ids(stripe_client, price):
    """A customer with a card, and an active subscription of ``price``."""
    customer = stripe_client.v1.customers.create(params={
        "email": "probe@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                                                        "customer": customer.id, "items": [{"price": price.id}]})
    return {"customer": customer.id, "subscription": sub.id, "item": sub["items"].data[0].id,
            "invoice": sub.latest_invoice, "price": price.id,
            "pm": customer.invoice_settings.default_payment_method}


def _sub(ids, **extra):
    return {"customer": ids["customer"], "items": [{"price": ids["price"]}], "billing_mode": {"type": "classic"},
            **extra}


# (operation, its call with one bad parameter, Stripe's code (None: none), the param named)
PROBES = [
    ("customers.create", lambda c, i: c.v1.customers.create(params={"foo": "x"}), "parameter_unknown", "foo"),
    ("customers.create", lambda c, i: c.v1.customers.create(params={"invoice_settings": {"foo": "x"}}),
     "parameter_unknown", "invoice_settings[foo]"),
    ("customers.create", lambda c, i: c.v1.customers.create(params={"tax_exempt": "sometimes"}), None, "tax_exempt"),
    ("customers.retrieve", lambda c, i: c.v1.customers.retrieve(i["customer"], params={"foo": "x"}),
     "parameter_unknown", "foo"),
    ("customers.update", lambda c, i: c.v1.customers.update(i["customer"], params={
        "invoice_settings": {"default_payment_method": i["pm"], "bar": "y"}}),
     "parameter_unknown", "invoice_settings[bar]"),
    ("customers.update", lambda c, i: c.v1.customers.update(i["customer"], params={"balance": "lots"}),
     "parameter_invalid_integer", "balance"),
    ("payment_methods.retrieve", lambda c, i: c.v1.payment_methods.retrieve(i["pm"], params={"foo": "x"}),
     "parameter_unknown", "foo"),
    ("setup_intents.create", lambda c, i: c.v1.setup_intents.create(params={
        "customer": i["customer"], "usage": "often"}),
     None, "usage"),
    ("setup_intents.create", lambda c, i: c.v1.setup_intents.create(params={"confirm": "maybe"}), None, "confirm"),
    ("setup_intents.create", lambda c, i: c.v1.setup_intents.create(params={"payment_method_options": {
        "card": {"foo": "x"}}}), "parameter_unknown", "payment_method_options[card][foo]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(i, payment_settings={"foo": "x"})),
     "parameter_unknown", "payment_settings[foo]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(
        i, trial_settings={"end_behavior": {"missing_payment_method": "pause", "foo": "x"}})),
     "parameter_unknown", "trial_settings[end_behavior][foo]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(i, invoice_settings={"foo": "x"})),
     "parameter_unknown", "invoice_settings[foo]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(i, payment_behavior="whenever")),
     None, "payment_behavior"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(
        i, payment_settings={"save_default_payment_method": "always"})),
     None, "payment_settings[save_default_payment_method]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(i, trial_period_days="1.5")),
     "parameter_invalid_integer", "trial_period_days"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": i["customer"], "items": [{"price": i["price"], "quantity": "two"}]}),
     "parameter_invalid_integer", "items[0][quantity]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": i["customer"], "items": [{"price": i["price"], "foo": "x"}]}),
     "parameter_unknown", "items[0][foo]"),
    ("subscriptions.create", lambda c, i: c.v1.subscriptions.create(params=_sub(i, off_session="maybe")),
     None, "off_session"),
    ("subscriptions.retrieve", lambda c, i: c.v1.subscriptions.retrieve(i["subscription"], params={"foo": "x"}),
     "parameter_unknown", "foo"),
    ("subscriptions.list", lambda c, i: c.v1.subscriptions.list(params={"status": "sleeping"}), None, "status"),
    ("subscriptions.list", lambda c, i: c.v1.subscriptions.list(params={"limit": 1000}),
     "parameter_invalid_integer", "limit"),
    ("subscriptions.list", lambda c, i: c.v1.subscriptions.list(params={"limit": "ten"}),
     "parameter_invalid_integer", "limit"),
    ("subscriptions.list", lambda c, i: c.v1.subscriptions.list(params={"foo": "x"}), "parameter_unknown", "foo"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "cancel_at_period_end": "maybe"}), None, "cancel_at_period_end"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "proration_date": "yesterday"}), "parameter_invalid_integer", "proration_date"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "proration_date": ""}), "parameter_invalid_empty", "proration_date"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "proration_behavior": "sometimes"}), None, "proration_behavior"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "items": [{"id": i["item"], "quantity": "x"}]}), "parameter_invalid_integer", "items[0][quantity]"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "payment_settings": {"foo": "x"}}), "parameter_unknown", "payment_settings[foo]"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "trial_settings": {"end_behavior": {"missing_payment_method": "shrug"}}}),
     None, "trial_settings[end_behavior][missing_payment_method]"),
    ("subscriptions.update", lambda c, i: c.v1.subscriptions.update(i["subscription"], params={
        "payment_behavior": "whenever"}), None, "payment_behavior"),
    ("subscriptions.cancel", lambda c, i: c.v1.subscriptions.cancel(i["subscription"], params={"prorate": "maybe"}),
     None, "prorate"),
    ("subscriptions.cancel", lambda c, i: c.v1.subscriptions.cancel(i["subscription"], params={
        "cancellation_details": {"foo": "x"}}), "parameter_unknown", "cancellation_details[foo]"),
    ("subscriptions.resume", lambda c, i: c.v1.subscriptions.resume(i["subscription"], params={
        "billing_cycle_anchor": "now"}), None, "billing_cycle_anchor"),
    ("subscriptions.resume", lambda c, i: c.v1.subscriptions.resume(i["subscription"], params={
        "billing_cycle_anchor": {"type": "later"}}), None, "billing_cycle_anchor[type]"),
    ("subscriptions.resume", lambda c, i: c.v1.subscriptions.resume(i["subscription"], params={
        "proration_date": "soon"}), "parameter_invalid_integer", "proration_date"),
    ("invoices.create_preview", lambda c, i: c.v1.invoices.create_preview(params={
        "subscription": i["subscription"], "subscription_details": {"foo": "x"}}),
     "parameter_unknown", "subscription_details[foo]"),
    ("invoices.create_preview", lambda c, i: c.v1.invoices.create_preview(params={
        "subscription": i["subscription"], "subscription_details": {"proration_behavior": "sometimes"}}),
     None, "subscription_details[proration_behavior]"),
    ("invoices.create_preview", lambda c, i: c.v1.invoices.create_preview(params={
        "subscription": i["subscription"], "subscription_details": {"proration_date": "x"}}),
     "parameter_invalid_integer", "subscription_details[proration_date]"),
    ("invoices.create_preview", lambda c, i: c.v1.invoices.create_preview(params={
        "subscription": i["subscription"], "subscription_details": {"items": [{"id": i["item"], "foo": "x"}]}}),
     "parameter_unknown", "subscription_details[items][0][foo]"),
    ("invoices.list", lambda c, i: c.v1.invoices.list(params={"limit": 1000}), "parameter_invalid_integer", "limit"),
    ("invoices.list", lambda c, i: c.v1.invoices.list(params={"status": "lost"}), None, "status"),
    ("invoices.list", lambda c, i: c.v1.invoices.list(params={"foo": "x"}), "parameter_unknown", "foo"),
    ("invoices.pay", lambda c, i: c.v1.invoices.pay(i["invoice"], params={"off_session": "maybe"}),
     None, "off_session"),
    ("invoices.pay", lambda c, i: c.v1.invoices.pay(i["invoice"], params={"foo": "x"}), "parameter_unknown", "foo"),
    ("payment_intents.retrieve", lambda c, i: c.v1.payment_intents.retrieve("pi_x", params={"foo": "x"}),
     "parameter_unknown", "foo"),
    ("billing_portal.sessions.create", lambda c, i: c.v1.billing_portal.sessions.create(params={
        "customer": i["customer"], "foo": "x"}), "parameter_unknown", "foo"),
    ("billing_portal.sessions.create", lambda c, i: c.v1.billing_portal.sessions.create(params={
        "customer": i["customer"], "flow_data": {"type": "dance"}}), None, "flow_data[type]"),
    ("webhook_endpoints.list", lambda c, i: c.v1.webhook_endpoints.list(params={"limit": 101}),
     "parameter_invalid_integer", "limit"),
    ("webhook_endpoints.list", lambda c, i: c.v1.webhook_endpoints.list(params={"foo": "x"}),
     "parameter_unknown", "foo"),
]

SERVICE_OPERATIONS = {"billing_portal.sessions.create", "customers.create", "customers.retrieve", "customers.update",
                      "invoices.create_preview", "invoices.list", "invoices.pay", "payment_intents.retrieve",
                      "payment_methods.retrieve", "setup_intents.create", "subscriptions.cancel",
                      "subscriptions.create", "subscriptions.list", "subscriptions.resume", "subscriptions.retrieve",
                      "subscriptions.update", "webhook_endpoints.list"}


def test_the_probes_cover_every_operation_the_service_calls():
    assert {operation for operation, *_ in PROBES} == SERVICE_OPERATIONS


@pytest.mark.parametrize("operation, call, code, param", PROBES,
                         ids=[f"{p[0]}:{p[3]}:{n}" for n, p in enumerate(PROBES)])
def test_a_bad_parameter_is_refused_by_name(stripe_client, ids, operation, call, code, param):
    with pytest.raises(stripe.InvalidRequestError) as refused:
        call(stripe_client, ids)
    error = refused.value
    assert (error.http_status, error.code, error.param) == (400, code, param)
    assert error.error.type == "invalid_request_error" and error.user_message


def test_the_unknown_parameter_message_is_stripes(stripe_client, ids):
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.subscriptions.update(ids["subscription"], params={"payment_settings": {"foo": "x"}})
    assert refused.value.user_message == "Received unknown parameter: payment_settings[foo]"


def test_every_shape_the_sdk_types_allow_is_accepted(stripe_client, ids, emulator):
    sub = stripe_client.v1.subscriptions.update(ids["subscription"], params={
        "metadata": {"a": "1"}, "cancel_at_period_end": True, "description": "probe",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "trial_settings": {"end_behavior": {"missing_payment_method": "pause"}}, "expand": ["latest_invoice"]})
    assert sub.cancel_at_period_end is True and sub.metadata.to_dict() == {"a": "1"}
    sub = stripe_client.v1.subscriptions.update(ids["subscription"], params={
        "metadata": "", "cancel_at_period_end": "false", "description": ""})  # "" unsets; "false" is a boolean
    assert sub.cancel_at_period_end is False and sub.metadata.to_dict() == {} and sub.description is None
    assert stripe_client.v1.subscriptions.list(params={"limit": "100", "status": "all"}).data
    preview = stripe_client.v1.invoices.create_preview(params={"customer": ids["customer"]})
    assert preview.amount_due == 1500, "Stripe previews a customer's upcoming invoice from the customer alone"
    assert stripe_client.v1.customers.update(ids["customer"], params={
        "invoice_settings": {"default_payment_method": ""}}).invoice_settings.default_payment_method is None


def test_the_endive_resume_anchor_is_accepted(stripe_client, price, emulator):
    customer = stripe_client.v1.customers.create(params={"email": "paused@example.com"})
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_period_days": 1,
        "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "trial_settings": {"end_behavior": {"missing_payment_method": "pause"}}})
    emulator.advance(2 * 86400)
    stripe_client.v1.setup_intents.confirm(sub.pending_setup_intent, params={"payment_method": "pm_card_visa"})
    resumed = stripe_client.v1.subscriptions.resume(sub.id, params={"billing_cycle_anchor": {"type": "now"}})
    assert resumed.status == "active"


def test_every_v1_route_is_an_sdk_operation():
    app = create_app(start_worker=False)
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/v1/"):
            for method in rule.methods - {"HEAD", "OPTIONS"}:
                assert params_type(method, rule.rule) is not None, f"{method} {rule.rule}"


ROUTES = [("POST", "/v1/subscriptions"), ("POST", "/v1/subscriptions/sub_x"), ("GET", "/v1/subscriptions"),
          ("POST", "/v1/invoices/create_preview"), ("POST", "/v1/customers"), ("POST", "/v1/setup_intents"),
          ("POST", "/v1/prices"), ("DELETE", "/v1/subscriptions/sub_x"), ("POST", "/v1/subscriptions/sub_x/resume"),
          ("GET", "/v1/invoices"), ("POST", "/v1/webhook_endpoints"), ("POST", "/v1/payment_methods")]
KEYS = st.sampled_from(["items", "items[0][price]", "items[0][quantity]", "items[][price]", "metadata[a]", "metadata",
                        "payment_settings[save_default_payment_method]", "trial_period_days", "limit", "expand[]",
                        "customer", "proration_date", "cancel_at_period_end", "subscription_details[items][0][id]",
                        "billing_cycle_anchor[type]", "card[number]", "unit_amount", "currency", "a[b][c]", "[]", "x]"])
VALUES = st.one_of(st.text(max_size=12), st.sampled_from(["", "true", "-1", "0", "1e9", "99999999999999999999",
                                                          "price_x", "cus_x", "usd"]))


@settings(max_examples=budget(30, 400), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), pairs=st.lists(st.tuples(KEYS, VALUES), max_size=6))
def test_no_client_input_gets_a_500(emulator, route, pairs):
    method, path = route
    body = urllib.parse.urlencode(pairs).encode()
    url = emulator.url + path + (f"?{body.decode()}" if method != "POST" else "")
    request = urllib.request.Request(url, data=body if method == "POST" else None, method=method,
                                     headers={"Authorization": "Bearer sk_test_probe"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            status, raw = answer.status, answer.read()
    except urllib.error.HTTPError as refused:
        status, raw = refused.code, refused.read()
    assert status < 500, raw
    if status >= 400:
        assert json.loads(raw)["error"]["type"] in ("invalid_request_error", "card_error")


def test_a_named_cancel_at_is_the_period_end(stripe_client, ids):
    sub = stripe_client.v1.subscriptions.update(ids["subscription"], params={"cancel_at": "min_period_end"})
    assert sub.cancel_at == sub["items"].data[0].current_period_end


def test_an_emulator_fault_is_still_stripes_error_shape():
    app = create_app(start_worker=False)

    @app.get("/v1/broken")
    def broken():
        raise RuntimeError("a bug")

    answer = app.test_client().get("/v1/broken")
    assert answer.status_code == 500 and answer.json["error"]["type"] == "api_error"


def _allowed(hint, depth=0):
    """Values of the strict SDK type ``hint``: what a client may send (hashes nested at most three deep)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:  # the emulator's integers and booleans
        return st.booleans() if args[0] is bool else st.integers(0, 10**9)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin in (typing.Union, types.UnionType):
        return st.one_of([_allowed(arg, depth) for arg in args])
    if origin is list:
        return st.lists(_allowed(args[0], depth + 1), max_size=2)
    if origin is dict:
        return st.dictionaries(st.sampled_from(["a", "b"]), _allowed(args[1], depth + 1), max_size=2)
    if typing_extensions.is_typeddict(hint):
        fields = typing.get_type_hints(hint, include_extras=True)
        required = {key: _allowed(_bare(fields[key]), depth + 1) for key in hint.__required_keys__}
        optional = {key: _allowed(_bare(value), depth + 1) for key, value in fields.items()
                    if key not in hint.__required_keys__} if depth < 3 else {}
        return st.fixed_dictionaries(required, optional=optional)
    return st.sampled_from(["", "x", "usd", "now", "12.5"])


def _bare(hint):
    while typing.get_origin(hint) in (typing_extensions.NotRequired, typing_extensions.Required):
        hint = typing.get_args(hint)[0]
    return hint


# The service's operations, with the path of an object each acts on.
SDK_ROUTES = [("post", "/v1/subscriptions", "/v1/subscriptions"),
              ("post", "/v1/subscriptions/<x>", "/v1/subscriptions/{subscription}"),
              ("delete", "/v1/subscriptions/<x>", "/v1/subscriptions/{subscription}"),
              ("post", "/v1/subscriptions/<x>/resume", "/v1/subscriptions/{subscription}/resume"),
              ("get", "/v1/subscriptions", "/v1/subscriptions"), ("post", "/v1/customers", "/v1/customers"),
              ("post", "/v1/customers/<x>", "/v1/customers/{customer}"),
              ("post", "/v1/setup_intents", "/v1/setup_intents"),
              ("post", "/v1/invoices/create_preview", "/v1/invoices/create_preview"),
              ("get", "/v1/invoices", "/v1/invoices"), ("post", "/v1/invoices/<x>/pay", "/v1/invoices/{invoice}/pay"),
              ("post", "/v1/billing_portal/sessions", "/v1/billing_portal/sessions"),
              ("get", "/v1/webhook_endpoints", "/v1/webhook_endpoints")]


@settings(max_examples=budget(20, 400), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_whatever_the_sdk_types_allow_never_gets_a_500(stripe_client, ids, data):
    method, rule, path = data.draw(st.sampled_from(SDK_ROUTES))
    params = data.draw(_allowed(strict_typeddict(params_type(method.upper(), rule))))
    if "customer" in params:
        params["customer"] = ids["customer"]
    try:
        stripe_client.raw_request(method, path.format(**ids), **params)
    except stripe.APIError as fault:  # a 5xx; a 4xx is Stripe's refusal of a value the emulator cannot act on
        raise AssertionError(f"{method} {path}: {params}") from fault
    except stripe.StripeError:
        pass
