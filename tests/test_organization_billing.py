"""An organisation's billing (CONTRACT "Organisations"): the user's billing endpoints under
``/organizations/<id>``, owner and admins only, and seats that follow members, provider-first.

Through HTTP, the real stripe SDK, the emulator and its real webhooks, as tests/test_subscription_management.py.
"""

import pytest
from sqlalchemy import select

from app.extensions import db
from app.models import Organization
from tests.support.accounts import PASSWORD
from tests.support.organizations import SEAT, Team


@pytest.fixture
def team(flow):
    return Team(flow)


def test_an_organization_subscribes_per_member_on_its_own_customer(team):
    team.join("bob", "admin")
    subscription_id = team.subscribe()
    assert team.stripe_quantity(subscription_id) == 2
    shown = team.client.get(f"{team.base}/subscription", headers=team.ada).json
    assert shown["plan"] == "basic" and shown["subscription"]["quantity"] == 2
    organization = team.client.get(team.base, headers=team.headers["bob"]).json
    assert organization["plan"] == "basic" and organization["seats"] == {"members": 2, "invitations": 0, "paid": 2}
    assert organization["card"] == {"brand": "visa", "last4": "4242"}
    assert team.flow.me()["plan"] == "free", "the owner's own plan is the owner's"
    customer = team.flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    assert team.flow.stripe.v1.customers.retrieve(customer).metadata.to_dict() == {"organization_id": team.org}
    invoices = team.client.get(f"{team.base}/subscription/invoices", headers=team.headers["bob"]).json["data"]
    assert [invoice["amount_paid"] for invoice in invoices] == [2 * SEAT]
    for headers in (team.ada, team.headers["bob"]):  # owner and admins, each their own row
        subscribed = [n for n in team.client.get("/notifications", headers=headers).json["data"]
                      if n["kind"] == "subscribed"]
        assert [n["data"]["organization"] for n in subscribed] == [{"id": team.org, "name": "Acme"}]
    assert team.client.get("/auth/me", headers=team.headers["bob"]).json["organizations"] == [
        {"id": team.org, "name": "Acme", "role": "admin", "plan": "basic"}]


def test_a_member_cannot_manage_billing_and_a_stranger_sees_nothing(team):
    team.join("cy")
    eve = team.person("eve")
    for path, method in (("/subscription", "get"), ("/subscription/intent", "post"), ("/subscription/portal", "post"),
                         ("/subscription/invoices", "get"), ("/subscription/cancel", "post"),
                         ("/subscription/billing-details", "get"), ("/subscription/payment-method", "post")):
        body = {"price": team.flow.prices["basic"]} if method == "post" else None
        member = getattr(team.client, method)(team.base + path, json=body, headers=team.headers["cy"])
        assert member.status_code == 403 and member.json["error"]["code"] == "forbidden", path
        stranger = getattr(team.client, method)(team.base + path, json=body, headers=eve)
        assert stranger.status_code == 404, path


def test_no_request_sets_an_organizations_quantity(team):
    subscription_id = team.subscribe()
    for path, body in (("/subscription/intent", {"price": team.flow.prices["basic"], "quantity": 9}),
                       ("/subscription/checkout", {"price": team.flow.prices["basic"], "quantity": 9,
                                                   "success_url": "http://localhost:3000/ok",
                                                   "cancel_url": "http://localhost:3000/no"}),
                       ("/subscription/swap", {"price": team.flow.prices["pro"], "quantity": 9})):
        refused = team.client.post(team.base + path, json=body, headers=team.ada)
        assert refused.status_code == 422 and "quantity" in refused.json["error"]["details"], path
    missing = team.client.post(f"{team.base}/subscription/quantity", json={"quantity": 9}, headers=team.ada)
    assert missing.status_code in (404, 405)
    assert team.stripe_quantity(subscription_id) == 1


def test_accepting_pays_the_seat_first_and_leaving_lowers_it(team):
    subscription_id = team.subscribe()
    team.join("bob", "admin")
    team.join("cy")
    assert team.stripe_quantity(subscription_id) == team.members() == 3
    invoices = team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    assert sorted(invoice.billing_reason for invoice in invoices) == [
        "subscription_create", "subscription_update", "subscription_update"], "each seat charged at once"
    assert all(invoice.status == "paid" for invoice in invoices)
    cy_id = team.client.get("/auth/me", headers=team.headers["cy"]).json["id"]
    assert team.client.delete(f"{team.base}/members/{cy_id}", headers=team.headers["cy"]).status_code == 204
    assert team.stripe_quantity(subscription_id) == team.members() == 2
    bob_id = team.client.get("/auth/me", headers=team.headers["bob"]).json["id"]
    assert team.client.delete(f"{team.base}/members/{bob_id}", headers=team.ada).status_code == 204
    assert team.stripe_quantity(subscription_id) == team.members() == 1


def test_a_declined_seat_adds_nobody_and_the_invitation_stays(team):
    subscription_id = team.subscribe()
    team.fail_card(subscription_id)
    team.person("cy")
    invitation = team.invite("cy")
    declined = team.accept("cy", invitation)
    assert declined.status_code == 402 and declined.json["error"]["code"] == "payment_required"
    assert not declined.json["error"].get("details"), "the invoice is the owner's business"
    assert team.members() == 1 and team.stripe_quantity(subscription_id) == 1
    assert team.client.get(team.base, headers=team.headers["cy"]).status_code == 404
    listed = team.client.get(f"{team.base}/invitations", headers=team.ada).json["data"]
    assert [i["id"] for i in listed] == [invitation["id"]], "the invitation is still valid"
    team.flow.deliver()
    kinds = [n for n in team.client.get("/notifications", headers=team.ada).json["data"]]
    failed = [n for n in kinds if n["kind"] in ("payment_failed", "swap_payment_failed")]
    assert failed and failed[0]["data"]["organization"] == {"id": team.org, "name": "Acme"}


def test_reconcile_sets_drifted_seats_back_without_charging(team):
    subscription_id = team.subscribe()
    team.join("bob")
    item = team.flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"]["data"][0]
    # A quantity changed in the Dashboard: drift, nobody's purchase.
    team.flow.stripe.v1.subscriptions.update(subscription_id, params={
        "items": [{"id": item.id, "quantity": 5}], "proration_behavior": "none"})
    team.flow.deliver()
    invoices_before = len(team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data)
    runner = team.app.test_cli_runner()
    dry = runner.invoke(args=["reconcile", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert f"{team.org} (Acme): seats 5 -> 2 (dry run: not set)" in dry.output
    assert team.stripe_quantity(subscription_id) == 5
    fixed = runner.invoke(args=["reconcile"])
    assert fixed.exit_code == 0, fixed.output
    assert f"{team.org} (Acme): seats 5 -> 2" in fixed.output
    assert team.stripe_quantity(subscription_id) == team.members() == 2
    assert len(team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data) == invoices_before
    again = runner.invoke(args=["reconcile"])
    assert "seats" not in again.output, "nothing drifted any more"


# -- the customer's email and name follow the organisation ----------------------------------------------

def customer_of(team):
    with team.app.app_context():
        customer = db.session.scalar(select(Organization.provider_id).where(Organization.id == team.org))
    return team.flow.stripe.v1.customers.retrieve(customer)


def test_a_transfer_moves_the_customers_email_to_the_new_owner_first_unless_it_has_a_billing_email(team):
    # Without a billing_email the customer's email is the owner's (Organization.stripe_email).
    team.subscribe()
    team.join("bob")
    ids = {name: team.client.get("/auth/me", headers=headers).json["id"]
           for name, headers in (("ada", team.ada), ("bob", team.headers["bob"]))}
    to_bob = {"user_id": ids["bob"], "password": PASSWORD}

    team.flow.emulator.add_fault("/v1/customers/", status=500, count=5)
    refused = team.client.post(f"{team.base}/transfer", json=to_bob, headers=team.ada)
    assert refused.status_code == 503 and refused.json["error"]["code"] == "provider_unavailable"
    team.flow.emulator.clear_faults()
    assert team.client.get(team.base, headers=team.ada).json["role"] == "owner"

    moved = team.client.post(f"{team.base}/transfer", json=to_bob, headers=team.ada)
    assert moved.status_code == 200, moved.json
    assert customer_of(team).email == "bob@example.com"

    assert team.client.patch(team.base, json={"billing_email": "billing@acme.example"},
                             headers=team.headers["bob"]).status_code == 200
    back = team.client.post(f"{team.base}/transfer", json={"user_id": ids["ada"], "password": PASSWORD},
                            headers=team.headers["bob"])
    assert back.status_code == 200, back.json
    assert customer_of(team).email == "billing@acme.example", "a billing email is nobody's to move"


def test_renaming_the_organization_renames_its_customer_first(team):
    # The customer's name (Organization.stripe_name) is the one Stripe prints on invoices and receipts.
    team.subscribe()
    assert customer_of(team).name == "Acme"

    team.flow.emulator.add_fault("/v1/customers/", status=500, count=5)
    refused = team.client.patch(team.base, json={"name": "Acme GmbH"}, headers=team.ada)
    assert refused.status_code == 503 and refused.json["error"]["code"] == "provider_unavailable"
    team.flow.emulator.clear_faults()
    assert team.client.get(team.base, headers=team.ada).json["name"] == "Acme"

    renamed = team.client.patch(team.base, json={"name": "Acme GmbH"}, headers=team.ada)
    assert renamed.status_code == 200 and renamed.json["name"] == "Acme GmbH"
    assert customer_of(team).name == "Acme GmbH"
