"""``/openapi.json`` is a valid OpenAPI 3 document covering every endpoint and its error bodies."""
import re

from openapi_spec_validator import validate

EXPECTED = {
    ("/auth/register", "post"), ("/auth/login", "post"), ("/auth/logout", "post"),
    ("/auth/token/refresh", "post"), ("/auth/me", "get"), ("/health", "get"),
    ("/auth/tokens", "get"), ("/auth/tokens", "post"), ("/auth/tokens/{token_id}", "delete"),
    ("/auth/logout-all", "post"),
}


def test_document_validates_and_covers_every_endpoint(app, client):
    document = client.get("/openapi.json").json
    validate(document)
    operations = {(path, method) for path, item in document["paths"].items() for method in item}
    assert EXPECTED <= operations
    rules = {(re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule), method.lower()) for rule in app.url_map.iter_rules()
             for method in rule.methods - {"HEAD", "OPTIONS"} if not rule.rule.startswith(("/static", "/openapi"))}
    assert rules <= operations


def test_error_bodies_are_documented_with_the_one_error_shape(client):
    document = client.get("/openapi.json").json
    error = document["components"]["schemas"]["Error"]
    assert error["properties"]["error"]["$ref"].endswith("/ErrorBody")
    me = document["paths"]["/auth/me"]["get"]
    assert me["security"] == [{"bearerAuth": []}]
    assert me["responses"]["401"]["$ref"] == "#/components/responses/UNAUTHORIZED"
    login = document["paths"]["/auth/login"]["post"]
    assert {"200", "401", "422", "429"} <= set(login["responses"])
    unauthorized = document["components"]["responses"]["UNAUTHORIZED"]
    assert unauthorized["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
