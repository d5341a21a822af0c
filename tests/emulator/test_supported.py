"""No silent drops (issue 32 item 2): every parameter the SDK types for a route the emulator serves is
applied by its handler or refused with 400 ``parameter_unsupported``, never accepted and ignored.

The walk covers every SDK-typed parameter, at every depth, of every ``/v1`` route; the SDK calls below
show both answers through the real client over HTTP, and that the parameters issue 32 found dropped are
applied now.
"""

from __future__ import annotations

import types
import typing

import pytest
import stripe
import typing_extensions

from scripts.stripe_emulator.app import create_app
from scripts.stripe_emulator.core.store import StripeError
from scripts.stripe_emulator.validation.operations import params_type
from scripts.stripe_emulator.validation.supported import SUPPORTED, check_supported, covered, supported
from scripts.stripe_emulator.validation.types import hints

DAY = 86400


def _routes() -> list[tuple[str, str]]:
    app = create_app()
    return sorted((method, rule.rule) for rule in app.url_map.iter_rules() if rule.rule.startswith("/v1/")
                  for method in rule.methods - {"HEAD", "OPTIONS"})


def _members(hint) -> list:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(hint) for m in _members(arg)]
    return [hint]


def sdk_paths(hint, prefix: str = "", depth: int = 0):
    """Every parameter path the SDK types below ``hint`` (``items[].price``): a hash's keys, a list's entries."""
    nested = [m for m in _members(hint) if typing_extensions.is_typeddict(m) or typing.get_origin(m) is list]
    if not nested or depth > 10:
        yield prefix
        return
    for member in nested:
        if typing.get_origin(member) is list:
            yield from sdk_paths(typing.get_args(member)[0], f"{prefix}[]", depth + 1)
        else:
            for name, sub in hints(member).items():
                yield from sdk_paths(sub, f"{prefix}.{name}" if prefix else name, depth + 1)


def _params(path: str) -> dict:
    """``a.b[].c`` -> ``{"a": {"b": [{"c": "x"}]}}``."""
    node: object = "x"
    for part in reversed(path.replace("[]", ".[]").split(".")):
        node = [node] if part == "[]" else {part: node}
    return typing.cast(dict, node)


ROUTES = _routes()


def test_every_route_served_has_its_applied_parameters_listed():
    assert [route for route in ROUTES if supported(*route) is None] == []
    assert len(SUPPORTED) == len(ROUTES), "no route listed that the emulator does not serve"


@pytest.mark.parametrize("route", ROUTES, ids=[f"{m} {r}" for m, r in ROUTES])
def test_every_sdk_parameter_is_applied_or_refused(route):
    paths = sorted(set(sdk_paths(params_type(*route))) - {""})
    applied = supported(*route)
    for path in paths:
        if covered(path, applied):
            check_supported(*route, _params(path))  # reaches the handler
            continue
        with pytest.raises(StripeError) as refused:
            check_supported(*route, _params(path))
        body = refused.value.body
        assert (refused.value.status, body["code"]) == (400, "parameter_unsupported"), path
        assert body["param"].split("[")[0] == path.split(".")[0].split("[")[0], (path, body["param"])
    # What the table lists is the SDK's: no typo leaves a parameter refused that the handler applies.
    assert [p for p in applied if not any(covered(path, frozenset({p})) for path in paths)] == [], route


def test_an_unmodelled_parameter_is_refused_through_the_sdk(stripe_client, customer, price):
    for call, name in (
            (lambda: stripe_client.v1.customers.create(params={"invoice_prefix": "ABC"}), "invoice_prefix"),
            (lambda: stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                "customer": customer.id, "items": [{"price": price.id}], "collection_method": "send_invoice"}),
             "collection_method"),
            (lambda: stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                "customer": customer.id, "items": [{"price": price.id, "metadata": {"k": "v"}}]}),
             "items[0][metadata]"),
            (lambda: stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
                "customer": customer.id, "items": [{"price": price.id}], "billing_cycle_anchor": 1_900_000_000}),
             "billing_cycle_anchor")):
        with pytest.raises(stripe.InvalidRequestError) as refused:
            call()
        assert (refused.value.http_status, refused.value.code, refused.value.param) == (
            400, "parameter_unsupported", name)
    assert stripe_client.v1.subscriptions.list(params={"customer": customer.id}).data == []


def test_the_parameters_found_dropped_are_applied(stripe_client, emulator, price):
    customer = stripe_client.v1.customers.create(params={
        "address": {"country": "DE", "postal_code": "10117"}, "shipping": {"name": "Jo", "address": {"country": "FR"}},
        "preferred_locales": ["de"], "tax_exempt": "exempt", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})
    assert (customer.address.postal_code, customer.shipping.name, customer.preferred_locales, customer.tax_exempt) \
        == ("10117", "Jo", ["de"], "exempt")
    euro = stripe_client.v1.prices.create(params={"unit_amount": 500, "currency": "eur",
                                                  "recurring": {"interval": "month"}, "product_data": {"name": "E"}})
    assert [p.id for p in stripe_client.v1.prices.list(params={"currency": "eur"}).data] == [euro.id]
    end = emulator.clock() + 20 * DAY
    sub = stripe_client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id}], "trial_end": end, "cancel_at": end + 5 * DAY})
    assert (sub.trial_end, sub.cancel_at) == (end, end + 5 * DAY)
    moved = stripe_client.v1.subscriptions.update(sub.id, params={
        "trial_end": end + DAY, "trial_settings": {"end_behavior": {"missing_payment_method": "cancel"}}})
    assert (moved.trial_end, moved["items"].data[0].current_period_end) == (end + DAY, end + DAY)
    assert moved.trial_settings.end_behavior.missing_payment_method == "cancel"
    session = stripe_client.v1.checkout.sessions.create(params={
        "mode": "subscription", "customer": customer.id, "success_url": "http://127.0.0.1:9/ok", "locale": "de",
        "line_items": [{"price": price.id, "quantity": 1}], "customer_update": {"address": "auto"},
        "subscription_data": {"billing_mode": {"type": "classic"}}})
    assert session.locale == "de"
    emulator.control("POST", f"checkout_sessions/{session.id}/complete", {
        "payment_method": "pm_card_visa", "address": {"country": "GB", "postal_code": "SW1A 1AA"}})
    assert stripe_client.v1.customers.retrieve(customer.id).address.country == "GB", "customer_update[address]=auto"
