"""The one JSON error shape every HTTP error has (CONTRACT, errors)."""


def assert_error(response, status, code):
    assert response.status_code == status
    assert response.mimetype == "application/json"
    assert set(response.json) == {"error"}
    assert response.json["error"]["code"] == code
    assert isinstance(response.json["error"]["message"], str) and response.json["error"]["message"]
    return response.json["error"]
