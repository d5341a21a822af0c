"""Organisations of verified users: a team made directly, or Ada's ``Team`` built through invitations."""
import re
from types import SimpleNamespace

import requests
from sqlalchemy import select

from app import email_tokens
from app.extensions import db
from app.models import Membership, User
from app.timeutil import utcnow
from tests.support.accounts import bearer, login, register, verify


def account(client, email, verified=True):
    """A registered, logged-in user (its address verified, as inviting and creating an organisation need)."""
    register(client, email=email, name=email.split("@")[0])
    if verified:
        verify(client.application, email)
    return bearer(login(client, email=email))


def user_id(client, headers):
    return client.get("/auth/me", headers=headers).json["id"]


def join(app, organization_id, uid, role="member"):
    """A member added as an accepted invitation would (tests/test_invitations.py covers that path)."""
    with app.app_context():
        db.session.add(Membership(organization_id=organization_id, user_id=uid, role=role))
        db.session.commit()


def make_team(app, client):
    """An organisation of Ada (owner), Bob (admin) and Cy (member); return the ids and headers."""
    ada, bob, cy = (account(client, f"{name}@example.com") for name in ("ada", "bob", "cy"))
    created = client.post("/organizations", json={"name": "Acme"}, headers=ada)
    assert created.status_code == 201, created.json
    org = created.json["id"]
    join(app, org, user_id(client, bob), "admin")
    join(app, org, user_id(client, cy), "member")
    return {"org": org, "ada": ada, "bob": bob, "cy": cy, "ids": {name: user_id(client, headers) for name, headers in
                                                                 (("ada", ada), ("bob", bob), ("cy", cy))}}


SEAT = 900  # the basic price, minor units a seat a month


class Team:
    """Ada (the flow's user) owns Acme; people join through invitations, as the client app would."""

    def __init__(self, flow):
        self.flow, self.client, self.app = flow, flow.client, flow.app
        self.ada = flow.headers
        verify(self.app, "ada@example.com")
        self.org = self.client.post("/organizations", json={"name": "Acme"}, headers=self.ada).json["id"]
        self.base = f"/organizations/{self.org}"
        self.headers = {}

    def person(self, name):
        """A registered user with a verified address; return their headers."""
        email = f"{name}@example.com"
        register(self.client, email=email, name=name)
        with self.app.app_context():
            db.session.scalars(select(User).where(User.email == email)).one().email_verified_at = utcnow()
            db.session.commit()
        self.headers[name] = bearer(login(self.client, email=email))
        return self.headers[name]

    def token(self, invitation):
        """The token the invitation email carries (minted as the delivery worker mints it)."""
        with self.app.app_context():
            data = {"invitation": invitation["id"], "email": invitation["email"]}
            link = email_tokens.link(SimpleNamespace(kind="invitation", data=data), None)
        return re.search(r"token=([\w.\-]+)", link).group(1)

    def invite(self, name, role="member"):
        answer = self.client.post(f"{self.base}/invitations", json={"email": f"{name}@example.com", "role": role},
                                  headers=self.ada)
        assert answer.status_code == 201, answer.json
        return answer.json

    def accept(self, name, invitation):
        return self.client.post("/organizations/invitations/accept", json={"token": self.token(invitation)},
                                headers=self.headers[name])

    def join(self, name, role="member"):
        self.person(name)
        answer = self.accept(name, self.invite(name, role))
        assert answer.status_code == 200, answer.json
        return answer.json

    def subscribe(self, card="pm_card_visa"):
        started = self.client.post(f"{self.base}/subscription/intent", json={"price": self.flow.prices["basic"]},
                                   headers=self.ada)
        assert started.status_code == 201, started.json
        self.flow.pay(started.json["client_secret"], card)
        self.flow.deliver()
        return started.json["subscription"]["id"]

    def fail_card(self, subscription_id):
        """Pay the organisation's subscription with a card every charge of which is declined from now on."""
        customer = self.flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
        method = self.flow.stripe.v1.payment_methods.attach("pm_card_chargeCustomerFail", params={"customer": customer})
        self.flow.stripe.v1.subscriptions.update(subscription_id, params={"default_payment_method": method.id})
        self.flow.deliver()

    def members(self):
        with self.app.app_context():
            return db.session.query(Membership).filter_by(organization_id=self.org).count()

    def stripe_quantity(self, subscription_id):
        return self.flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"]["data"][0]["quantity"]


def declined_seat(team, name):
    """``name`` accepts while the organisation's card is declined: 402, the seat held; return
    ``(subscription_id, invitation, open invoice)``."""
    subscription_id = team.subscribe()
    team.fail_card(subscription_id)
    team.person(name)
    invitation = team.invite(name)
    declined = team.accept(name, invitation)
    assert declined.status_code == 402 and declined.json["error"]["code"] == "payment_required", declined.json
    invoices = team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id, "status": "open"}).data
    assert len(invoices) == 1
    return subscription_id, invitation, invoices[0]


def pay_on_stripes_page(invoice, refused=False):
    """The owner pays the open invoice as the payment_failed email says: on Stripe's hosted page, new card; with
    ``refused``, the page must refuse it (a voided invoice)."""
    paid = requests.post(f"{invoice.hosted_invoice_url}/pay", data={"payment_method": "pm_card_visa"}, timeout=10)
    # A refused payment is a redirect back to the page with ``error=``, which ``requests`` follows to a 200.
    assert paid.status_code == 200 and ("error=" in paid.url) == refused, (paid.url, paid.text[:200])


def charged(team, subscription_id):
    """What the subscription's invoices took, minor units."""
    return sum(i.amount_paid for i in team.flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data)


def credit_waiting(team, subscription_id):
    """The net credit (minor units) of the prorations waiting for the subscription's next invoice: its proration
    lines in Stripe's preview of it, a credit's negative amount counted positive."""
    preview = team.flow.stripe.v1.invoices.create_preview(params={"subscription": subscription_id})
    return -sum(line.amount for line in preview.lines.data if line.parent.subscription_item_details.proration)


def me(team, name):
    return team.client.get("/auth/me", headers=team.headers[name]).json["id"]
