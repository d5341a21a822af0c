"""Email change and account deletion (issue 27, CONTRACT "Accounts"): provider-first, as every billing write.

The live service (real HTTP webhooks) against the Stripe emulator through the real SDK; emails
through the real outbox worker to a real SMTP server. Helpers are tests/test_accounts.py's.
"""
import pytest
from sqlalchemy import select, text

from app.extensions import db
from app.models import Organization, User
from tests.support.accounts import (
    PASSWORD,
    bearer,
    error_code,
    last_token,
    login,
    mails,
    personal_token,
    post,
    register,
    token_in,
    work,
)
from tests.support.billing import settle
from tests.support.notifications import mail_config
from tests.support.organizations import Team


@pytest.fixture
def live_config(smtp_server):
    return {**mail_config(smtp_server), "PROVIDER_TRIAL_DAYS": 14}


@pytest.fixture
def mail_app(make_app, smtp_server):
    return make_app(**mail_config(smtp_server))


@pytest.fixture
def mail_client(mail_app):
    return mail_app.test_client()


# -- email change -----------------------------------------------------------------------------------

def test_an_email_change_moves_the_address_only_when_the_new_one_is_verified(mail_app, mail_client, smtp_server):
    register(mail_client)
    register(mail_client, email="bob@example.com", name="Bob")
    headers = bearer(login(mail_client))
    wrong = post(mail_client, "/auth/email/change", {"email": "ada@new.example", "password": "not it at all"}, headers)
    assert wrong.status_code == 403 and error_code(wrong) == "invalid_credentials"
    for taken in ("BOB@example.com", "ada@example.com"):
        response = post(mail_client, "/auth/email/change", {"email": taken, "password": PASSWORD}, headers)
        assert response.status_code == 409 and error_code(response) == "email_taken"
    response = post(mail_client, "/auth/email/change", {"email": "Ada@New.example", "password": PASSWORD}, headers)
    assert response.status_code == 202 and response.json == {"sent": True}
    assert mail_client.get("/auth/me", headers=headers).json["email"] == "ada@example.com"

    work(mail_app)
    (link,) = mails(smtp_server, "ada@new.example")
    (notice,) = mails(smtp_server, "ada@example.com", "Your email address is about to change")
    assert "ada@new.example" in notice.get_body(("plain",)).get_content() and "token=" not in notice.as_string()
    token = token_in(link)
    moved = post(mail_client, "/auth/email/verify", {"token": token})
    assert moved.status_code == 200
    assert moved.json["email"] == "ada@new.example" and moved.json["email_verified_at"] is not None
    login(mail_client, email="ada@new.example")
    assert error_code(post(mail_client, "/auth/email/verify", {"token": token})) == "invalid_token", "works once"
    kinds = [n["kind"] for n in mail_client.get("/notifications", headers=headers).json["data"]]
    assert kinds == ["email_change_requested"]


def test_an_email_change_to_an_address_registered_meanwhile_is_409(mail_app, mail_client, smtp_server):
    register(mail_client)
    headers = bearer(login(mail_client))
    post(mail_client, "/auth/email/change", {"email": "ada@new.example", "password": PASSWORD}, headers)
    work(mail_app)
    register(mail_client, email="ada@new.example")
    response = post(mail_client, "/auth/email/verify", {"token": last_token(smtp_server, "ada@new.example",
                                                                             "Confirm your new email address")})
    assert response.status_code == 409 and error_code(response) == "email_taken"


def customer_of(flow):
    with flow.app.app_context():
        return db.session.scalar(select(User.provider_id).where(User.id == flow.me()["id"]))


def verify_through_an_outage(flow, smtp_server, unmoved=lambda: None):
    """Move Ada's address to ada@new.example: Stripe fails the first verification (503, nothing moved here,
    and ``unmoved()`` checks Stripe's side), the same link then succeeds."""
    post(flow.client, "/auth/email/change", {"email": "ada@new.example", "password": PASSWORD}, flow.headers)
    work(flow.app)
    token = last_token(smtp_server, "ada@new.example")
    flow.emulator.add_fault("/v1/customers/", status=500, count=5)
    refused = post(flow.client, "/auth/email/verify", {"token": token})
    assert refused.status_code == 503 and error_code(refused) == "provider_unavailable"
    flow.emulator.clear_faults()
    assert flow.me()["email"] == "ada@example.com"
    unmoved()
    assert post(flow.client, "/auth/email/verify", {"token": token}).status_code == 200
    assert flow.me()["email"] == "ada@new.example"


def test_a_verified_email_change_moves_the_stripe_customers_email_first(flow, smtp_server):
    flow.intent()
    customer = customer_of(flow)

    def unmoved():
        assert flow.stripe.v1.customers.retrieve(customer).email == "ada@example.com"

    verify_through_an_outage(flow, smtp_server, unmoved)
    assert flow.stripe.v1.customers.retrieve(customer).email == "ada@new.example"


def organization_with_a_customer(flow):
    """Ada's new organisation (tests/test_organization_billing.py's ``Team``), its customer made by an intent."""
    team = Team(flow)
    started = flow.client.post(f"{team.base}/subscription/intent", json={"price": flow.prices["basic"]},
                               headers=flow.headers)
    assert started.status_code == 201, started.json
    return team


def organization_customer(team):
    with team.app.app_context():
        customer = db.session.scalar(select(Organization.provider_id).where(Organization.id == team.org))
    return team.flow.stripe.v1.customers.retrieve(customer)


def test_a_verified_email_change_moves_the_email_of_each_owned_organizations_customer_without_a_billing_email(
        flow, smtp_server):
    # Acme's customer mails its owner (no billing_email: Organization.stripe_email); Globex's has its own address.
    acme, globex = organization_with_a_customer(flow), organization_with_a_customer(flow)
    assert flow.client.patch(globex.base, json={"billing_email": "billing@globex.example"},
                             headers=flow.headers).status_code == 200
    assert organization_customer(acme).email == "ada@example.com"
    verify_through_an_outage(flow, smtp_server)
    assert organization_customer(acme).email == "ada@new.example"
    assert organization_customer(globex).email == "billing@globex.example"


# -- name change ------------------------------------------------------------------------------------

def test_a_name_change_renames_the_users_stripe_customer_first(flow):
    flow.intent()
    customer = customer_of(flow)
    assert flow.stripe.v1.customers.retrieve(customer).name == "Ada"

    flow.emulator.add_fault("/v1/customers/", status=500, count=5)
    refused = flow.client.patch("/auth/me", json={"name": "Ada Lovelace"}, headers=flow.headers)
    assert refused.status_code == 503 and error_code(refused) == "provider_unavailable"
    flow.emulator.clear_faults()
    assert flow.me()["name"] == "Ada"

    assert flow.client.patch("/auth/me", json={"name": "Ada Lovelace"}, headers=flow.headers).status_code == 200
    assert flow.stripe.v1.customers.retrieve(customer).name == "Ada Lovelace"
    assert flow.client.patch("/auth/me", json={"name": None}, headers=flow.headers).status_code == 200
    assert flow.stripe.v1.customers.retrieve(customer).name is None


def test_a_name_change_keeps_the_invoice_name_billing_details_gave_the_customer(flow):
    """Review finding: the profile's rename overwrote (or cleared) the company name set for the invoices."""
    flow.intent()
    given = flow.client.put("/subscription/billing-details", json={
        "name": "Analytical Engines Ltd", "address": {"line1": "1 Main St", "country": "GB"}}, headers=flow.headers)
    assert given.status_code == 200, given.json
    for name in ("Ada Lovelace", None):
        assert flow.client.patch("/auth/me", json={"name": name}, headers=flow.headers).status_code == 200
        assert flow.stripe.v1.customers.retrieve(customer_of(flow)).name == "Analytical Engines Ltd"


# -- deletion ---------------------------------------------------------------------------------------

def user_rows(app):
    """Return ``{table: rows}`` of the tables that hold a user's rows, non-empty ones only."""
    with app.app_context():
        db.session.remove()
        with db.engine.connect() as conn:
            counts = {table.name: conn.execute(text(f"SELECT COUNT(*) FROM {table.name}")).scalar()
                      for table in db.metadata.sorted_tables
                      # Hashes kept on purpose: what stops a second trial once the address comes back.
                      if table.name not in ("webhook_events", "failed_webhook_events", "deleted_subscribers",
                                            "trial_redeemers")}
    return {name: count for name, count in counts.items() if count}


def test_deleting_a_subscriber_cancels_at_stripe_deletes_every_row_and_no_second_trial(flow, smtp_server):
    started = flow.intent()
    assert started["subscription"]["status"] == "trialing"
    subscription = started["subscription"]["id"]
    settle(flow)
    customer = customer_of(flow)
    personal_token(flow.client, flow.headers, "profile:read")
    flow.client.post("/subscription/portal", json={}, headers={**flow.headers, "Idempotency-Key": "portal-1"})
    assert set(user_rows(flow.app)) >= {"users", "personal_access_tokens", "subscriptions", "notifications",
                                        "idempotency_keys"}

    wrong = flow.client.delete("/auth/me", json={"password": "not it at all"}, headers=flow.headers)
    assert wrong.status_code == 403 and error_code(wrong) == "invalid_credentials"
    deleted = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert deleted.status_code == 204, deleted.json
    assert flow.stripe.v1.subscriptions.retrieve(subscription).status == "canceled"
    assert flow.stripe.v1.customers.retrieve(customer).to_dict().get("deleted") is True
    assert user_rows(flow.app) == {}
    assert flow.client.get("/auth/me", headers=flow.headers).status_code == 401

    delivered = settle(flow)
    assert "customer.subscription.deleted" in delivered, "the later webhooks were answered 2xx as no-ops"
    assert user_rows(flow.app) == {}

    register(flow.client)
    flow.headers = bearer(login(flow.client))
    again = flow.intent()
    assert again["subscription"]["status"] == "incomplete", "a deleted subscriber's address gets no second trial"


def test_a_stripe_outage_during_deletion_deletes_nothing(flow):
    subscription = flow.intent()["subscription"]["id"]
    settle(flow)
    before = user_rows(flow.app)
    flow.emulator.add_fault("/v1/subscriptions/", status=500, count=5)
    refused = flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers)
    assert refused.status_code == 503 and error_code(refused) == "provider_unavailable"
    flow.emulator.clear_faults()
    assert user_rows(flow.app) == before
    assert flow.stripe.v1.subscriptions.retrieve(subscription).status == "trialing"
    assert flow.me()["subscription"]["id"] == subscription
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    assert user_rows(flow.app) == {}


def test_a_retried_deletion_finds_the_customer_already_deleted(flow):
    flow.intent()
    customer = customer_of(flow)
    flow.stripe.v1.customers.delete(customer)
    assert flow.client.delete("/auth/me", json={"password": PASSWORD}, headers=flow.headers).status_code == 204
    assert user_rows(flow.app) == {}


def test_deletion_needs_a_login_token_or_account_delete(client):
    register(client)
    headers = bearer(login(client))
    reader = personal_token(client, headers, "profile:read", "profile:write")
    refused = client.delete("/auth/me", json={"password": PASSWORD}, headers=reader)
    assert refused.status_code == 403 and refused.json["error"]["details"] == {"ability": "account:delete"}
    assert client.delete("/auth/me", json={}, headers=headers).status_code == 422
    deleter = personal_token(client, headers, "account:delete")
    assert client.delete("/auth/me", json={"password": PASSWORD}, headers=deleter).status_code == 204
    assert client.post("/auth/login", json={"email": "ada@example.com", "password": PASSWORD}).status_code == 401


def test_an_account_that_never_subscribed_leaves_no_digest(client, app):
    register(client)
    assert client.delete("/auth/me", json={"password": PASSWORD}, headers=bearer(login(client))).status_code == 204
    assert "deleted_subscribers" not in user_rows(app)
    with app.app_context():
        assert db.session.execute(text("SELECT COUNT(*) FROM deleted_subscribers")).scalar() == 0


# -- tokens die with what they were sent for (CONTRACT "Changes to the fourth round") ---------------

def _move(mail_app, mail_client, smtp_server, headers, to):
    post(mail_client, "/auth/email/change", {"email": to, "password": PASSWORD}, headers)
    work(mail_app)
    token = last_token(smtp_server, to)
    assert post(mail_client, "/auth/email/verify", {"token": token}).status_code == 200
    return token


def test_a_reset_link_mailed_to_an_old_address_dies_when_the_account_moves(mail_app, mail_client, smtp_server):
    register(mail_client)
    headers = bearer(login(mail_client))
    post(mail_client, "/auth/password/forgot", {"email": "ada@example.com"})
    work(mail_app)
    stale = last_token(smtp_server, subject="Reset your password")
    _move(mail_app, mail_client, smtp_server, headers, "ada@new.example")
    taken = post(mail_client, "/auth/password/reset", {"token": stale, "password": "a takeover passphrase"})
    assert taken.status_code == 400 and error_code(taken) == "invalid_token"
    login(mail_client, email="ada@new.example")  # the password is still the owner's


def test_an_email_change_link_dies_when_a_later_change_is_asked_or_redeemed(mail_app, mail_client, smtp_server):
    register(mail_client)
    headers = bearer(login(mail_client))
    post(mail_client, "/auth/email/change", {"email": "ada@first.example", "password": PASSWORD}, headers)
    work(mail_app)
    replaced = last_token(smtp_server, "ada@first.example")
    first = _move(mail_app, mail_client, smtp_server, headers, "ada@second.example")
    assert error_code(post(mail_client, "/auth/email/verify", {"token": replaced})) == "invalid_token", \
        "a later request replaced it"
    _move(mail_app, mail_client, smtp_server, headers, "ada@example.com")  # back to where the first started
    for token in (replaced, first):
        assert error_code(post(mail_client, "/auth/email/verify", {"token": token})) == "invalid_token"
    assert mail_client.get("/auth/me", headers=headers).json["email"] == "ada@example.com"
