"""What an organisation's people are told (issue 43, "Operators"): its billing mail names it, and a
transfer, a removal and a deletion each tell the people they concern. Through HTTP, the delivery worker
and a real SMTP server.
"""
from sqlalchemy import select

from app.extensions import db
from app.models import Membership, Organization, User
from app.notifications import notify
from tests.support.accounts import PASSWORD
from tests.support.billing import start_flow
from tests.support.organizations import Team


def test_an_organizations_billing_mail_names_it_and_a_users_own_does_not(make_app, smtp_server):
    app = make_app(MAIL_SERVER="127.0.0.1", MAIL_PORT=smtp_server.port, MAIL_DEFAULT_SENDER="billing@example.com")
    with app.app_context():
        ada = User(email="ada@example.com", password_hash="x", name="Ada")
        acme = Organization(name="Acme")
        db.session.add_all([ada, acme])
        db.session.flush()
        db.session.add(Membership(organization_id=acme.id, user_id=ada.id, role="owner"))
        declined = {"subscription": "sub_1", "reason": "payment_failed", "hosted_invoice_url": "https://pay.example/i"}
        notify(acme, "evt_org", "swap_payment_failed", declined)
        notify(ada, "evt_own", "swap_payment_failed", declined)
        db.session.commit()
    assert app.test_cli_runner().invoke(args=["deliver-notifications", "--once"]).exit_code == 0
    mails = {message["Subject"]: message.get_body(("plain",)).get_content() for message in smtp_server.messages}
    assert set(mails) == {"Acme: Your subscription change did not go through",
                          "Your subscription change did not go through"}
    organizations = mails["Acme: Your subscription change did not go through"]
    assert "the change to the plan or seats of Acme" in organizations and "you asked for" not in organizations
    assert "About the billing of Acme, of which you are an owner or admin." in organizations
    own = mails["Your subscription change did not go through"]
    assert "you asked for" in own and "Acme" not in own


def kinds(team, name):
    headers = team.ada if name == "ada" else team.headers[name]
    return [n["kind"] for n in team.client.get("/notifications?limit=100", headers=headers).json["data"]]


def test_a_transfer_a_removal_and_a_deletion_tell_the_people_they_concern(live, emulator, stripe_client, prices):
    team = Team(start_flow(live, emulator, stripe_client, prices))
    for name in ("bob", "cy", "dee"):
        team.join(name)
    ids = {name: team.client.get("/auth/me", headers=team.headers[name]).json["id"] for name in ("bob", "cy", "dee")}
    assert team.client.delete(f"{team.base}/members/{ids['cy']}", headers=team.ada).status_code == 204
    assert team.client.delete(f"{team.base}/members/{ids['dee']}", headers=team.headers["dee"]).status_code == 204
    assert "member_removed" in kinds(team, "cy") and "member_removed" not in kinds(team, "dee"), "a leave: no notice"
    moved = team.client.post(f"{team.base}/transfer", json={"user_id": ids["bob"], "password": PASSWORD},
                             headers=team.ada)
    assert moved.status_code == 200, moved.json
    assert "ownership_transferred" in kinds(team, "ada") and "ownership_transferred" in kinds(team, "bob")
    deleted = team.client.delete(team.base, json={"password": PASSWORD}, headers=team.headers["bob"])
    assert deleted.status_code == 204, deleted.json
    assert "organization_deleted" in kinds(team, "ada") and "organization_deleted" not in kinds(team, "bob")
    with team.app.app_context():
        assert db.session.scalar(select(Organization).where(Organization.id == team.org)) is None
