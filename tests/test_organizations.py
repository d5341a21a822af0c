"""Organisations, members, roles, transfer and deletion (CONTRACT "Organisations"), through HTTP."""
import pytest

from app.extensions import db
from app.models import Membership, Organization
from tests.support.accounts import PASSWORD, bearer, login, register
from tests.support.organizations import account, make_team


@pytest.fixture
def team(app, client):
    return make_team(app, client)


def test_the_creator_is_the_owner_and_sees_the_organization(client):
    ada = account(client, "ada@example.com")
    created = client.post("/organizations", json={"name": "Acme"}, headers=ada)
    assert created.status_code == 201
    body = created.json
    assert body["id"].startswith("org_") and body["role"] == "owner" and body["plan"] == "free"
    assert body["seats"] == {"members": 1, "invitations": 0, "paid": None}
    assert body["subscription"] is None and body["card"] is None and body["billing_email"] is None
    listed = client.get("/organizations", headers=ada).json
    assert [o["id"] for o in listed["data"]] == [body["id"]] and listed["has_more"] is False
    assert client.get(f"/organizations/{body['id']}", headers=ada).json == body


def test_pages_of_organizations_follow_starting_after(client):
    ada = account(client, "ada@example.com")
    ids = [client.post("/organizations", json={"name": f"Org {n}"}, headers=ada).json["id"] for n in range(3)]
    first = client.get("/organizations?limit=2", headers=ada).json
    rest = client.get(f"/organizations?limit=2&starting_after={first['data'][-1]['id']}", headers=ada).json
    seen = [o["id"] for o in first["data"] + rest["data"]]
    assert sorted(seen) == sorted(ids) and len(set(seen)) == 3 and first["has_more"] and not rest["has_more"]
    refused = client.get("/organizations?starting_after=org_nope", headers=ada)
    assert refused.status_code == 422 and refused.json["error"]["code"] == "validation_error"


def test_a_non_member_gets_404_for_every_organization_endpoint(client, team):
    eve = account(client, "eve@example.com")
    org = team["org"]
    for method, path, body in (("get", f"/organizations/{org}", None),
                               ("patch", f"/organizations/{org}", {"name": "x"}),
                               ("get", f"/organizations/{org}/members", None),
                               ("delete", f"/organizations/{org}/members/{team['ids']['cy']}", None),
                               ("post", f"/organizations/{org}/transfer", {"user_id": 1, "password": PASSWORD}),
                               ("get", "/organizations/org_doesnotexist", None)):
        answer = getattr(client, method)(path, json=body, headers=eve)
        assert answer.status_code == 404 and answer.json["error"]["code"] == "not_found", (method, path)


def test_a_member_reads_but_cannot_manage(client, team):
    org, cy = team["org"], team["cy"]
    assert client.get(f"/organizations/{org}", headers=cy).json["role"] == "member"
    members = client.get(f"/organizations/{org}/members", headers=cy).json
    assert {(m["user"]["email"], m["role"]) for m in members["data"]} == {
        ("ada@example.com", "owner"), ("bob@example.com", "admin"), ("cy@example.com", "member")}
    for method, path, body in (("patch", f"/organizations/{org}", {"name": "Mine"}),
                               ("patch", f"/organizations/{org}/members/{team['ids']['bob']}", {"role": "member"}),
                               ("delete", f"/organizations/{org}/members/{team['ids']['bob']}", None),
                               ("delete", f"/organizations/{org}", {"password": PASSWORD}),
                               ("post", f"/organizations/{org}/transfer", {"user_id": team["ids"]["cy"],
                                                                           "password": PASSWORD})):
        answer = getattr(client, method)(path, json=body, headers=cy)
        assert answer.status_code == 403 and answer.json["error"]["code"] == "forbidden", (method, path)


def test_roles_change_but_the_owner_only_by_transfer(client, team):
    org, bob, ids = team["org"], team["bob"], team["ids"]
    promoted = client.patch(f"/organizations/{org}/members/{ids['cy']}", json={"role": "admin"}, headers=bob)
    assert promoted.status_code == 200 and promoted.json["role"] == "admin"
    owner = client.patch(f"/organizations/{org}/members/{ids['ada']}", json={"role": "member"}, headers=bob)
    assert owner.status_code == 409 and owner.json["error"]["code"] == "owner_must_transfer"
    bad = client.patch(f"/organizations/{org}/members/{ids['cy']}", json={"role": "owner"}, headers=bob)
    assert bad.status_code == 422
    missing = client.patch(f"/organizations/{org}/members/999999", json={"role": "admin"}, headers=bob)
    assert missing.status_code == 404


def test_the_owner_cannot_leave_a_member_can(client, team):
    org, ids = team["org"], team["ids"]
    stuck = client.delete(f"/organizations/{org}/members/{ids['ada']}", headers=team["ada"])
    assert stuck.status_code == 409 and stuck.json["error"]["code"] == "owner_must_transfer"
    by_admin = client.delete(f"/organizations/{org}/members/{ids['ada']}", headers=team["bob"])
    assert by_admin.status_code == 409
    assert client.delete(f"/organizations/{org}/members/{ids['cy']}", headers=team["cy"]).status_code == 204
    assert client.get(f"/organizations/{org}", headers=team["cy"]).status_code == 404
    assert client.get(f"/organizations/{org}", headers=team["ada"]).json["seats"]["members"] == 2


def test_transfer_makes_the_member_owner_and_the_owner_admin(client, team):
    org, ids = team["org"], team["ids"]
    wrong = client.post(f"/organizations/{org}/transfer", json={"user_id": ids["cy"], "password": "wrong-password"},
                        headers=team["ada"])
    assert wrong.status_code == 403 and wrong.json["error"]["code"] == "invalid_credentials"
    by_admin = client.post(f"/organizations/{org}/transfer", json={"user_id": ids["bob"], "password": PASSWORD},
                           headers=team["bob"])
    assert by_admin.status_code == 403 and by_admin.json["error"]["code"] == "forbidden"
    done = client.post(f"/organizations/{org}/transfer", json={"user_id": ids["cy"], "password": PASSWORD},
                       headers=team["ada"])
    assert done.status_code == 200 and done.json["role"] == "admin"
    assert client.get(f"/organizations/{org}", headers=team["cy"]).json["role"] == "owner"


def test_deleting_an_account_that_owns_a_team_is_refused_until_transferred(client, team):
    refused = client.delete("/auth/me", json={"password": PASSWORD}, headers=team["ada"])
    assert refused.status_code == 409 and refused.json["error"]["code"] == "owns_organization"
    assert refused.json["error"]["details"] == {"organizations": [team["org"]]}
    assert client.get("/auth/me", headers=team["ada"]).status_code == 200
    # A member's account goes, and with it its membership.
    assert client.delete("/auth/me", json={"password": PASSWORD}, headers=team["cy"]).status_code == 204
    assert client.get(f"/organizations/{team['org']}", headers=team["ada"]).json["seats"]["members"] == 2


def test_deleting_the_only_members_account_deletes_the_organization(app, client):
    ada = account(client, "ada@example.com")
    org = client.post("/organizations", json={"name": "Solo"}, headers=ada).json["id"]
    assert client.delete("/auth/me", json={"password": PASSWORD}, headers=ada).status_code == 204
    with app.app_context():
        assert db.session.get(Organization, org) is None


def test_deleting_an_organization_takes_the_owners_password(app, client, team):
    org = team["org"]
    wrong = client.delete(f"/organizations/{org}", json={"password": "wrong-password"}, headers=team["ada"])
    assert wrong.status_code == 403
    by_admin = client.delete(f"/organizations/{org}", json={"password": PASSWORD}, headers=team["bob"])
    assert by_admin.status_code == 403 and by_admin.json["error"]["code"] == "forbidden"
    assert client.delete(f"/organizations/{org}", json={"password": PASSWORD}, headers=team["ada"]).status_code == 204
    assert client.get(f"/organizations/{org}", headers=team["bob"]).status_code == 404
    with app.app_context():
        assert db.session.query(Membership).count() == 0


def test_a_token_needs_the_organizations_abilities(client):
    register(client)
    reader = client.post("/auth/tokens", json={"name": "ro", "abilities": ["organizations:read"]},
                         headers=bearer(login(client))).json
    headers = bearer(reader)
    refused = client.post("/organizations", json={"name": "Acme"}, headers=headers)
    assert refused.status_code == 403 and refused.json["error"]["code"] == "insufficient_scope"
    assert client.get("/organizations", headers=headers).status_code == 200


def test_the_openapi_document_lists_the_abilities(client):
    paths = client.get("/openapi.json").json["paths"]
    assert paths["/organizations"]["post"]["x-abilities"] == ["organizations:write"]
    assert paths["/organizations/{organization_id}"]["get"]["x-abilities"] == ["organizations:read"]
    assert paths["/organizations/{organization_id}/members/{user_id}"]["delete"]["x-abilities"] == [
        "organizations:write"]


def test_me_lists_the_organizations_with_role_and_plan(client, team):
    me = client.get("/auth/me", headers=team["bob"]).json
    assert me["organizations"] == [{"id": team["org"], "name": "Acme", "role": "admin", "plan": "free"}]
    assert me["plan"] == "free"
    assert client.get("/auth/me", headers=account(client, "eve@example.com")).json["organizations"] == []


def test_owner_and_admins_are_told_who_left(client, team):
    org, ids = team["org"], team["ids"]
    assert client.delete(f"/organizations/{org}/members/{ids['cy']}", headers=team["bob"]).status_code == 204
    for name in ("ada", "bob"):
        (told,) = [n for n in client.get("/notifications", headers=team[name]).json["data"]
                   if n["kind"] == "member_left"]
        assert told["data"] == {"member": {"id": ids["cy"], "email": "cy@example.com", "name": "cy"},
                                "reason": "removed", "organization": {"id": org, "name": "Acme"}}
    (removed,) = client.get("/notifications", headers=team["cy"]).json["data"]
    assert (removed["kind"], removed["data"]) == ("member_removed", {"organization": {"id": org, "name": "Acme"}})
