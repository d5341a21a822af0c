"""A price not sold (not in ``PROVIDER_PLANS``) is refused by the request's schema, ``SoldPrice``, on every endpoint
that names a price: 422 ``unknown_price`` with the price in ``details``, before Stripe is asked anything (issue 43
item 3: one field instead of a check in each service)."""
import pytest

from app.subscription.schemas import SoldPrice

UNSOLD = "price_not_sold"
URLS = {"success_url": "http://localhost:3000/welcome", "cancel_url": "http://localhost:3000/plans"}
NAMING_A_PRICE = [
    ("POST", "/subscription/intent", {}), ("POST", "/subscription/checkout", URLS),
    ("POST", "/subscription/swap", {}), ("POST", "/subscription/swap", {"at": "period_end"}),
    ("GET", "/subscription/swap/preview", {}), ("GET", "/subscription/swap/preview", {"at": "period_end"}),
]


def stripe_calls(emulator):
    return emulator.control("GET", "requests")["total"]


@pytest.mark.parametrize(("method", "path", "extra"), NAMING_A_PRICE)
def test_a_price_not_sold_is_422_unknown_price_before_any_stripe_call(client, auth_headers, emulator, method, path,
                                                                      extra):
    before = stripe_calls(emulator)
    fields = {"price": UNSOLD, **extra}
    response = client.open(path, method=method, headers=auth_headers, json=fields if method == "POST" else None,
                           query_string=fields if method == "GET" else None)
    assert (response.status_code, response.json) == (422, {"error": {
        "code": "unknown_price", "message": f"Price {UNSOLD!r} is not offered by this service.",
        "details": {"price": UNSOLD}}})
    assert stripe_calls(emulator) == before


def test_a_malformed_price_is_a_validation_error_first(client, auth_headers):
    response = client.post("/subscription/swap", headers=auth_headers, json={"price": ""})
    assert response.status_code == 422 and response.json["error"]["code"] == "validation_error"
    assert "price" in response.json["error"]["details"]


def test_every_request_schema_that_names_a_price_takes_it_as_a_sold_price(app):
    with app.app_context():
        named = {(rule.endpoint, field.__class__) for rule in app.url_map.iter_rules()
                 for schema in _request_schemas(app.view_functions[rule.endpoint])
                 for name, field in schema.fields.items() if name == "price"}
    assert {endpoint for endpoint, _ in named} >= {"subscription.intent", "subscription.checkout",
                                                   "subscription.swap", "subscription.swap_preview"}
    assert {kind for _, kind in named} == {SoldPrice}


def _request_schemas(view):
    """The schema instances of ``view``'s ``@blp.arguments`` (flask-smorest keeps them in its ``_apidoc``)."""
    return [argument["schema"] for argument in getattr(view, "_apidoc", {}).get("arguments", {}).get("parameters", [])]
