"""Bad input: every documented operation fuzzed from ``/openapi.json``, and generated webhook bodies.

Complements tests/test_errors.py and tests/test_webhook.py (fixed malformed JSON, wrong types, 413,
bad signatures, non-event JSON): here the inputs are generated, so the cases nobody thought of
are tried too. No input may get a 5xx or an answer outside the documented schema, and a webhook
that is not a correctly signed provider event must store nothing.
"""
import json
import time

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import func, select

from app.extensions import db
from app.models import WebhookEvent
from tests.depth import budget
from tests.signing import sign
from tests.support.accounts import PASSWORD, fresh_token
from tests.support.reliability import TALLY

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance,
          response_headers_conformance]
EXAMPLES_PER_OPERATION = budget(quick=2, deep=30)


@pytest.fixture
def api_schema(fuzzed_app):
    loaded = schemathesis.openapi.from_wsgi("/openapi.json", fuzzed_app)
    # The coverage phase tries every boundary of every field: about 100 s, so only in the deep run.
    loaded.config.phases.coverage.enabled = budget(quick=False, deep=True)
    return loaded


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_outside_its_schema_without_a_token(case):
    TALLY["inputs_tried"] += 1
    case.call_and_validate(checks=CHECKS)


@schema.parametrize()
@settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_operation_answers_5xx_or_outside_its_schema_with_a_valid_token(case, fuzzed_app):
    TALLY["inputs_tried"] += 1
    case.call_and_validate(headers={"Authorization": f"Bearer {fresh_token(fuzzed_app)}"}, checks=CHECKS)


def ledger_size(app):
    with app.app_context():
        return db.session.scalar(select(func.count()).select_from(WebhookEvent))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=12)
event_types = st.sampled_from(["customer.subscription.created", "customer.subscription.updated",
                               "customer.subscription.deleted", "invoice.paid", "customer.updated",
                               "payment_method.attached", "charge.refunded", ""]) | st.text(max_size=40)
subscription_like = st.dictionaries(
    st.sampled_from(["object", "id", "customer", "status", "items", "cancel_at_period_end"]), json_values)
event_like = st.fixed_dictionaries(
    {"id": st.text(max_size=30) | json_values, "type": event_types, "created": st.integers() | json_values},
    optional={"data": st.fixed_dictionaries({}, optional={"object": json_values | subscription_like,
                                                        "previous_attributes": json_values}) | json_values})


# Keys of a subscription, an invoice or a customer that the row writer and the listeners read.
OBJECT_FIELDS = {
    "id": st.text(max_size=12),
    "status": st.sampled_from(["active", "trialing", "incomplete", "past_due", "canceled"]),
    "items": st.fixed_dictionaries({"data": st.lists(st.dictionaries(
        st.sampled_from(["id", "price", "plan", "quantity", "current_period_end"]), json_values), max_size=2)}),
    "default_payment_method": st.text(max_size=12),
    "invoice_settings": st.fixed_dictionaries({}, optional={"default_payment_method": json_values}),
    "subscription": st.text(max_size=12),
    "parent": st.fixed_dictionaries({"subscription_details": st.fixed_dictionaries(
        {}, optional={"subscription": st.text(max_size=12) | json_values})}),
    "payment_intent": st.text(max_size=12),
    "payments": st.fixed_dictionaries({"data": st.lists(st.fixed_dictionaries(
        {"payment": st.dictionaries(st.just("payment_intent"), json_values)}), max_size=2)}),
    **{key: st.integers() for key in ("current_period_end", "cancel_at", "canceled_at", "ended_at", "trial_end",
                                      "created")},
    "cancel_at_period_end": st.booleans(),
    "metadata": st.dictionaries(st.sampled_from(["type", "user_id"]), json_values),
}


def events_of(customer):
    """Correctly shaped events of ``customer`` whose objects are odd: each field plausible, junk or absent."""
    fields = st.fixed_dictionaries({}, optional={key: value | json_values for key, value in OBJECT_FIELDS.items()})
    reference = st.just(customer) | st.fixed_dictionaries({"id": st.just(customer)}, optional={"object": st.just(
        "customer")})
    owned = st.builds(lambda obj, ref: {**obj, "customer": ref}, fields, reference)
    objects_of_type = {
        **{event_type: owned.map(lambda obj: {**obj, "object": "subscription"}) for event_type in (
            "customer.subscription.created", "customer.subscription.updated", "customer.subscription.deleted")},
        **{event_type: owned.map(lambda obj: {**obj, "object": "invoice"}) for event_type in (
            "invoice.paid", "invoice.payment_succeeded", "invoice.payment_failed")},
        "customer.updated": fields.map(lambda obj: {**obj, "object": "customer", "id": customer}),
        "payment_method.attached": owned,
    }
    previous = st.dictionaries(st.sampled_from(["status", "items", "cancel_at_period_end", "cancel_at",
                                                "default_payment_method", "invoice_settings"]), json_values)
    return st.sampled_from(sorted(objects_of_type)).flatmap(lambda event_type: st.fixed_dictionaries({
        "id": st.text(min_size=1, max_size=30), "type": st.just(event_type), "created": st.integers(0, 10**11 - 1),
        "data": st.fixed_dictionaries({"object": objects_of_type[event_type]},
                                      optional={"previous_attributes": previous | st.none()})}))


@settings(max_examples=budget(quick=50, deep=400), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_signed_webhook_bodies_never_answer_5xx(app, provider_customer, data):
    """Correctly signed but arbitrary JSON: 200 (an event the service may ignore) or 400, never 5xx.

    About a third of the bodies are events of a known customer, so their odd objects reach the row writer and
    the listeners instead of stopping at the customer look-up.
    """
    body = data.draw(st.one_of(event_like | json_values, events_of(provider_customer)), label="body")
    payload = json.dumps(body).encode()
    response = app.test_client().post("/provider/webhook", data=payload, content_type="application/json",
                                      headers={"Stripe-Signature": sign(payload)})
    TALLY["inputs_tried"] += 1
    assert response.status_code in (200, 400), (body, response.json)
    assert set(response.json) <= {"received", "error"}


@settings(max_examples=budget(quick=30, deep=200), deadline=None, suppress_health_check=list(HealthCheck))
@given(payload=st.binary(max_size=300) | st.text(max_size=100).map(str.encode),
       header=st.one_of(st.none(), st.text(max_size=80), st.builds(
           lambda t, v: f"t={t},v1={v}", st.integers(-10**12, 10**12) | st.text(max_size=12),
           st.text("0123456789abcdef", max_size=64))))
def test_unsigned_or_garbled_webhooks_are_400_and_store_nothing(app, payload, header):
    headers = {} if header is None else {"Stripe-Signature": header}
    try:
        response = app.test_client().post("/provider/webhook", data=payload, content_type="application/json",
                                          headers=headers)
    except (UnicodeEncodeError, ValueError):
        return  # a header that is not latin-1 or holds a newline cannot be sent over HTTP at all
    TALLY["inputs_tried"] += 1
    try:
        payload.decode("utf-8")
        refusals = {"invalid_signature"}
    except UnicodeDecodeError:
        refusals = {"invalid_signature", "invalid_json"}  # which one depends on the header being sent
    assert response.status_code == 400 and response.json["error"]["code"] in refusals
    assert ledger_size(app) == 0


@pytest.mark.parametrize("mutate", [
    lambda e: e["data"]["object"].update(object="customer"),        # a subscription event carrying a customer
    lambda e: e["data"]["object"].pop("id"),                        # a subscription without id
    lambda e: e["data"].update(previous_attributes=["status"]),     # previous_attributes not an object
    lambda e: e.update(created="1700000000"),                       # created as a string
    lambda e: e["data"]["object"].update(items="si_1"),             # items not a list object
    lambda e: e["data"]["object"].update(customer={"id": 5}),       # customer reference of the wrong type
    lambda e: e["data"]["object"].update(customer=5),                # (found on PostgreSQL: was a 500)
    lambda e: e["data"]["object"].update(customer=["cus_1"]),
    lambda e: e["data"].update(previous_attributes={"status": ["incomplete"]}),  # read by CommitPlan
    lambda e: e["data"].update(previous_attributes={"items": "si_1"}),
])
def test_events_whose_object_contradicts_their_type_are_refused_or_ignored_without_5xx(app, provider_customer, mutate):
    # Of a known customer, so that what the mutation leaves valid reaches the row writer and the listeners.
    event = {"id": "evt_mut", "type": "customer.subscription.updated", "created": int(time.time()),
             "data": {"object": {"id": "sub_1", "object": "subscription", "customer": provider_customer,
                                 "status": "active", "items": {"data": []}}, "previous_attributes": {}}}
    mutate(event)
    payload = json.dumps(event).encode()
    response = app.test_client().post("/provider/webhook", data=payload, content_type="application/json",
                                      headers={"Stripe-Signature": sign(payload)})
    TALLY["inputs_tried"] += 1
    assert response.status_code in (200, 400)


@settings(max_examples=budget(quick=20, deep=120), deadline=None, suppress_health_check=list(HealthCheck))
@given(email=st.text(max_size=60), password=st.text(max_size=60), name=st.one_of(st.none(), st.text(max_size=60)))
def test_odd_unicode_and_nul_bytes_in_credentials_never_answer_5xx(app, email, password, name):
    client = app.test_client()
    for path, body in (("/auth/register", {"email": email, "password": password, "name": name}),
                       ("/auth/login", {"email": email + "\x00", "password": password})):
        response = client.post(path, json=body)
        TALLY["inputs_tried"] += 1
        assert response.status_code in (201, 401, 409, 422, 429), (path, body, response.json)


@pytest.mark.parametrize("path", ["/auth/register", "/auth/login", "/subscription/intent", "/provider/webhook"])
def test_every_body_taking_endpoint_refuses_an_oversized_body_with_413(client, auth_headers, path):
    response = client.post(path, data=b'{"a": "' + b"x" * (1024 * 1024) + b'"}', content_type="application/json",
                           headers={**auth_headers, "Stripe-Signature": "t=1,v1=00"})
    TALLY["inputs_tried"] += 1
    assert response.status_code == 413 and response.json["error"]["code"] == "payload_too_large"


def test_register_login_roundtrip_survives_unicode(client):
    email, name = "zoë.ünïcode@example.com", "Ада \u202e\u200b 🦄"
    assert client.post("/auth/register", json={"email": email, "password": PASSWORD, "name": name}).status_code == 201
    assert client.post("/auth/login", json={"email": email, "password": PASSWORD}).status_code == 200


def test_a_body_that_is_not_utf8_is_invalid_json_not_a_500(app):
    # Found by the generated bodies above: the SDK decoded the body itself and raised past us.
    payload = b"\xff\xfe{\x00"
    response = app.test_client().post("/provider/webhook", data=payload, content_type="application/json",
                                      headers={"Stripe-Signature": sign(payload)})
    assert response.status_code == 400 and response.json["error"]["code"] == "invalid_json"
    assert ledger_size(app) == 0
