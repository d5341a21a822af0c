"""Invitations carry their sender's authority, and limits are per person (CONTRACT "Additions (sixth round)",
"Changes to the fifth round"; issue 42). Through HTTP, with a member's and an owner's tokens.
"""
import re
from types import SimpleNamespace

import pytest

from app import email_tokens
from app.extensions import db
from app.models import Membership
from tests.support.accounts import PASSWORD
from tests.support.organizations import account, join, make_team, user_id


def invite(client, org, headers, email, role="member"):
    return client.post(f"/organizations/{org}/invitations", json={"email": email, "role": role}, headers=headers)


def token_of(app, invitation):
    """The token the invitation email carries (minted as the delivery worker mints it)."""
    with app.app_context():
        data = {"invitation": invitation["id"], "email": invitation["email"]}
        link = email_tokens.link(SimpleNamespace(kind="invitation", data=data), None)
    return re.search(r"token=([\w.\-]+)", link).group(1)


def accept(client, app, headers, invitation):
    return client.post("/organizations/invitations/accept", json={"token": token_of(app, invitation)}, headers=headers)


@pytest.mark.parametrize("how", ["demoted", "removed", "left"])
def test_an_admins_pending_invitation_dies_with_their_authority(app, client, how):
    """Before: a demoted or removed admin's pending admin invitation, accepted by their second address, made them
    admin again. Now it is revoked with the sender's authority, and its link is dead."""
    team = make_team(app, client)
    org, bob = team["org"], team["bob"]
    sent = invite(client, org, bob, "bob.second@example.com", "admin")
    assert sent.status_code == 201, sent.json
    if how == "demoted":
        changed = client.patch(f"/organizations/{org}/members/{team['ids']['bob']}", json={"role": "member"},
                               headers=team["ada"])
        assert changed.status_code == 200, changed.json
    else:
        by = team["ada"] if how == "removed" else bob
        assert client.delete(f"/organizations/{org}/members/{team['ids']['bob']}", headers=by).status_code == 204
    assert client.get(f"/organizations/{org}/invitations", headers=team["ada"]).json["data"] == []
    second = account(client, "bob.second@example.com")
    refused = accept(client, app, second, sent.json)
    assert refused.status_code == 400 and refused.json["error"]["code"] == "invalid_token", refused.json
    assert client.get(f"/organizations/{org}", headers=second).status_code == 404


def test_a_deleted_admins_pending_invitation_dies_with_their_account(app, client):
    """Before: an admin deleting their account left their admin invitation valid for their second address."""
    team = make_team(app, client)
    sent = invite(client, team["org"], team["bob"], "bob.second@example.com", "admin").json
    assert client.delete("/auth/me", json={"password": PASSWORD}, headers=team["bob"]).status_code == 204
    assert client.get(f"/organizations/{team['org']}/invitations", headers=team["ada"]).json["data"] == []
    second = account(client, "bob.second@example.com")
    refused = accept(client, app, second, sent)
    assert refused.status_code == 400 and refused.json["error"]["code"] == "invalid_token", refused.json


def test_an_owner_sent_admin_invitation_survives_the_owners_transfer(app, client):
    """A transfer makes the old owner an admin, who may still invite admins: their invitations stay valid."""
    team = make_team(app, client)
    sent = invite(client, team["org"], team["ada"], "dee@example.com", "admin").json
    moved = client.post(f"/organizations/{team['org']}/transfer",
                        json={"user_id": team["ids"]["cy"], "password": PASSWORD}, headers=team["ada"])
    assert moved.status_code == 200, moved.json
    assert [row["id"] for row in client.get(f"/organizations/{team['org']}/invitations",
                                            headers=team["ada"]).json["data"]] == [sent["id"]]
    dee = account(client, "dee@example.com")
    joined = accept(client, app, dee, sent)
    assert joined.status_code == 200 and joined.json["role"] == "admin", joined.json


def test_an_invitation_never_grants_a_role_above_its_senders_at_acceptance(app, client):
    """Defence in depth: an invitation whose sender is no manager when it is accepted (a change that did not go
    through the service's revocation, here a direct demotion) grants nothing."""
    team = make_team(app, client)
    sent = invite(client, team["org"], team["bob"], "dee@example.com", "admin").json
    with app.app_context():  # the row changed behind the service's back
        db.session.get(Membership, (team["org"], team["ids"]["bob"])).role = "member"
        db.session.commit()
    dee = account(client, "dee@example.com")
    refused = accept(client, app, dee, sent)
    assert refused.status_code == 400 and refused.json["error"]["code"] == "invalid_token", refused.json
    owner_sent = invite(client, team["org"], team["ada"], "eve@example.com", "admin").json
    eve = account(client, "eve@example.com")
    joined = accept(client, app, eve, owner_sent)
    assert joined.status_code == 200 and joined.json["role"] == "admin"


def test_only_a_verified_address_invites_or_creates_an_organization(app, client):
    unverified = account(client, "new@example.com", verified=False)
    created = client.post("/organizations", json={"name": "Spam"}, headers=unverified)
    assert created.status_code == 403 and created.json["error"]["code"] == "email_unverified", created.json
    team = make_team(app, client)
    carl = account(client, "carl@example.com", verified=False)
    join(app, team["org"], user_id(client, carl), "admin")
    sent = invite(client, team["org"], carl, "victim@example.com")
    assert sent.status_code == 403 and sent.json["error"]["code"] == "email_unverified", sent.json


def test_invitations_and_organizations_are_limited_per_person(make_app):
    """Before: one account sent 100 invitations to one address in 10 s by spreading them over organisations.
    Now the limits are per person, across organisations (429)."""
    app = make_app(USER_INVITATION_RATE_LIMIT="3 per day", ORGANIZATION_CREATE_RATE_LIMIT="2 per day")
    client = app.test_client()
    ada = account(client, "ada@example.com")
    orgs = [client.post("/organizations", json={"name": f"Org {n}"}, headers=ada) for n in range(3)]
    assert [o.status_code for o in orgs] == [201, 201, 429], [o.json for o in orgs]
    answers = [invite(client, orgs[n % 2].json["id"], ada, f"victim{n}@example.com").status_code for n in range(4)]
    assert answers == [201, 201, 201, 429], answers
