"""``/openapi.json`` is a valid OpenAPI 3 document covering every endpoint and its error bodies."""
import re

from openapi_spec_validator import validate

EXPECTED = {
    ("/auth/register", "post"), ("/auth/login", "post"), ("/auth/logout", "post"),
    ("/auth/token/refresh", "post"), ("/auth/me", "get"), ("/health", "get"), ("/health/ready", "get"),
    ("/metrics", "get"),
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


def test_the_document_says_what_the_service_refuses_and_what_is_optional(client):
    """Where schemathesis found the document and the service disagreeing (issue 14, item 20)."""
    document = client.get("/openapi.json").json
    schemas = document["components"]["schemas"]
    password = schemas["Register"]["properties"]["password"]
    assert password["pattern"] == r"^[^\u0000]*$" and "surrogates" in password["description"]
    portal = document["paths"]["/subscription/portal"]["post"]
    assert portal["requestBody"]["required"] is False
    return_url = schemas["PortalRequest"]["properties"]["return_url"]
    assert return_url["format"] == "uri" and return_url["minLength"] == 1
    assert return_url["pattern"].startswith("^https?://")
    for path in ("/auth/login", "/subscription/intent", "/provider/webhook"):
        assert {"400", "415"} <= set(next(iter(document["paths"][path].values()))["responses"]), path


def test_an_empty_return_url_is_refused_as_the_document_says(client, auth_headers):
    response = client.post("/subscription/portal", json={"return_url": ""}, headers=auth_headers)
    assert response.status_code == 422 and "return_url" in response.json["error"]["details"]
