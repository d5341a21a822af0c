"""Invitations (CONTRACT "Organisations"): a signed link by email, accepted only by the invited verified
address; revocable, expiring, limited per organisation. Through HTTP, the real outbox worker and SMTP."""
from datetime import timedelta

import pytest
import time_machine

from app.timeutil import utcnow
from tests.support.accounts import bearer, last_token, login, mails, register, work
from tests.support.notifications import mail_config

INVITE_SUBJECT = "You are invited to join Acme"


@pytest.fixture
def mail_app(make_app, smtp_server):
    return make_app(**mail_config(smtp_server), ORGANIZATION_INVITATION_RATE_LIMIT="3 per day")


@pytest.fixture
def client(mail_app):
    return mail_app.test_client()


def verified(app, client, smtp_server, email):
    """Register ``email`` and open its verification link; return its headers."""
    register(client, email=email, name=email.split("@")[0])
    work(app)
    assert client.post("/auth/email/verify", json={"token": last_token(
        smtp_server, to=email, subject="Verify your email address")}).status_code == 200
    return bearer(login(client, email=email))


@pytest.fixture
def acme(mail_app, client, smtp_server):
    ada = verified(mail_app, client, smtp_server, "ada@example.com")
    org = client.post("/organizations", json={"name": "Acme"}, headers=ada).json["id"]
    return {"org": org, "ada": ada}


def invite(app, client, acme, email="cy@example.com", **extra):
    answer = client.post(f"/organizations/{acme['org']}/invitations", json={"email": email, **extra},
                         headers=acme["ada"])
    work(app)
    return answer


def test_the_invited_verified_address_accepts_from_the_emailed_link(mail_app, client, smtp_server, acme):
    sent = invite(mail_app, client, acme, "Cy@Example.com", role="admin")
    assert sent.status_code == 201
    assert sent.json["email"] == "cy@example.com" and sent.json["role"] == "admin"
    assert sent.json["id"].startswith("inv_") and "token" not in sent.json
    (message,) = mails(smtp_server, "cy@example.com", INVITE_SUBJECT)
    assert "http://localhost:3000/invitations/accept?token=" in message.get_body(("plain",)).get_content()
    listed = client.get(f"/organizations/{acme['org']}/invitations", headers=acme["ada"]).json["data"]
    assert [i["id"] for i in listed] == [sent.json["id"]]
    assert client.get(f"/organizations/{acme['org']}", headers=acme["ada"]).json["seats"] == {
        "members": 1, "invitations": 1, "paid": None}
    token = last_token(smtp_server, "cy@example.com", INVITE_SUBJECT)
    cy = verified(mail_app, client, smtp_server, "cy@example.com")
    joined = client.post("/organizations/invitations/accept", json={"token": token}, headers=cy)
    assert joined.status_code == 200 and joined.json["id"] == acme["org"] and joined.json["role"] == "admin"
    assert joined.json["seats"] == {"members": 2, "invitations": 0, "paid": None}
    again = client.post("/organizations/invitations/accept", json={"token": token}, headers=cy)
    assert again.status_code == 400 and again.json["error"]["code"] == "invalid_token"
    # The invitation email's row is the inviter's, and is not listed; the owner is told who joined.
    kinds = [(n["kind"], n["data"]["member"]["email"], n["data"]["role"])
             for n in client.get("/notifications", headers=acme["ada"]).json["data"]]
    assert kinds == [("member_joined", "cy@example.com", "admin")]


def test_another_or_an_unverified_address_cannot_accept(mail_app, client, smtp_server, acme):
    invite(mail_app, client, acme)
    token = last_token(smtp_server, "cy@example.com", INVITE_SUBJECT)
    eve = verified(mail_app, client, smtp_server, "eve@example.com")
    refused = client.post("/organizations/invitations/accept", json={"token": token}, headers=eve)
    assert refused.status_code == 403 and refused.json["error"]["code"] == "email_mismatch"
    register(client, email="cy@example.com")
    unverified = client.post("/organizations/invitations/accept", json={"token": token},
                             headers=bearer(login(client, email="cy@example.com")))
    assert unverified.status_code == 403 and unverified.json["error"]["code"] == "email_unverified"
    for bad in (token[:-2] + "xx", "not-a-token"):
        answer = client.post("/organizations/invitations/accept", json={"token": bad}, headers=eve)
        assert answer.status_code == 400 and answer.json["error"]["code"] == "invalid_token"


def test_a_revoked_invitation_link_is_dead(mail_app, client, smtp_server, acme):
    sent = invite(mail_app, client, acme)
    token = last_token(smtp_server, "cy@example.com", INVITE_SUBJECT)
    assert client.delete(f"/organizations/{acme['org']}/invitations/{sent.json['id']}",
                         headers=acme["ada"]).status_code == 204
    assert client.delete(f"/organizations/{acme['org']}/invitations/{sent.json['id']}",
                         headers=acme["ada"]).status_code == 404
    cy = verified(mail_app, client, smtp_server, "cy@example.com")
    dead = client.post("/organizations/invitations/accept", json={"token": token}, headers=cy)
    assert dead.status_code == 400 and dead.json["error"]["code"] == "invalid_token"


def test_an_invitation_expires_and_can_be_sent_again(make_app, smtp_server):
    app = make_app(**mail_config(smtp_server), ORGANIZATION_INVITATION_TTL="60")
    client = app.test_client()
    acme = {"ada": verified(app, client, smtp_server, "ada@example.com")}
    acme["org"] = client.post("/organizations", json={"name": "Acme"}, headers=acme["ada"]).json["id"]
    invite(app, client, acme)
    token = last_token(smtp_server, "cy@example.com", INVITE_SUBJECT)
    cy = verified(app, client, smtp_server, "cy@example.com")
    with time_machine.travel(utcnow() + timedelta(minutes=61), tick=False):
        expired = client.post("/organizations/invitations/accept", json={"token": token}, headers=cy)
        assert expired.status_code == 400 and expired.json["error"]["code"] == "invalid_token"
        assert client.get(f"/organizations/{acme['org']}/invitations", headers=acme["ada"]).json["data"] == []
        assert invite(app, client, acme).status_code == 201


def test_already_member_already_invited_and_the_rate_limit(mail_app, client, smtp_server, acme):
    mine = client.post(f"/organizations/{acme['org']}/invitations", json={"email": "ada@example.com"},
                       headers=acme["ada"])
    assert mine.status_code == 409 and mine.json["error"]["code"] == "already_member"
    assert invite(mail_app, client, acme, "b@example.com").status_code == 201
    twice = invite(mail_app, client, acme, "b@example.com")
    assert twice.status_code == 409 and twice.json["error"]["code"] == "already_invited"
    assert invite(mail_app, client, acme, "c@example.com").status_code == 201
    assert invite(mail_app, client, acme, "d@example.com").status_code == 201
    limited = invite(mail_app, client, acme, "e@example.com")
    assert limited.status_code == 429 and limited.json["error"]["code"] == "rate_limited"
    assert int(limited.headers["Retry-After"]) >= 1


def test_members_and_strangers_cannot_invite_or_list(mail_app, client, smtp_server, acme):
    invite(mail_app, client, acme)
    cy = verified(mail_app, client, smtp_server, "cy@example.com")
    client.post("/organizations/invitations/accept", json={"token": last_token(
        smtp_server, "cy@example.com", INVITE_SUBJECT)}, headers=cy)
    eve = verified(mail_app, client, smtp_server, "eve@example.com")
    for headers, status in ((cy, 403), (eve, 404)):
        assert client.post(f"/organizations/{acme['org']}/invitations", json={"email": "x@example.com"},
                           headers=headers).status_code == status
        assert client.get(f"/organizations/{acme['org']}/invitations", headers=headers).status_code == status
