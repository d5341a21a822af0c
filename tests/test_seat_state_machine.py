"""Seats follow members under any sequence (issue 33 item 5): a hypothesis state machine drives accepts,
removals, leaves, transfers, declined cards and cancellations against the emulator, through HTTP.

After every step: Stripe's quantity of the organisation's live subscription equals its member count,
and nobody is a member whose accept was refused. Each example is a new organisation on one service.
The budget is bounded under ``make test`` and larger under ``make test-deep`` (``TEST_DEEP=1``).
"""
import uuid

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.depth import budget
from tests.support.accounts import PASSWORD
from tests.support.billing import start_flow
from tests.support.organizations import Team

PEOPLE = 4
STEPS = []  # (example, step) pairs run, for the closing note: pytest -s prints the count


class Seats(RuleBasedStateMachine):
    """The model: who is a member, who owns, whether a subscription lives; the service is asked each step."""

    flow = None  # the test's Flow, set before the machine runs

    @initialize()
    def start(self):
        self.team = Team(self.flow)
        self.run = uuid.uuid4().hex[:8]
        self.names = [f"p{n}{self.run}" for n in range(PEOPLE)]
        for name in self.names:
            self.team.person(name)
        self.ids = {name: self.team.client.get("/auth/me", headers=self.team.headers[name]).json["id"]
                    for name in self.names}
        self.team.headers["owner"], self.ids["owner"] = self.team.ada, self.team.flow.me()["id"]
        self.owner, self.members, self.invitations = "owner", {"owner"}, {}
        self.subscription = self.team.subscribe()
        self.card_declines = False

    def _live(self):
        if self.subscription is None:
            return None
        live = self.team.flow.stripe.v1.subscriptions.retrieve(self.subscription)
        return live if live.status in ("active", "trialing", "past_due", "unpaid") else None

    @rule(person=st.integers(0, PEOPLE - 1))
    def accept(self, person):
        name = self.names[person]
        if name in self.members:
            return
        if name not in self.invitations:
            self.invitations[name] = self.team.invite(name)
        answer = self.team.accept(name, self.invitations[name])
        assert answer.status_code in (200, 402, 409), answer.json
        if answer.status_code == 200:
            self.members.add(name)
            del self.invitations[name]
            live = self._live()
            if live is not None:
                invoice = self.team.flow.stripe.v1.invoices.retrieve(live.latest_invoice)
                assert invoice.status == "paid", "nobody joins a paying organisation without a paid seat"
        else:
            assert self._live() is not None and name not in self.members

    @rule(person=st.integers(0, PEOPLE - 1), leave=st.booleans())
    def remove(self, person, leave):
        name = self.names[person]
        if name not in self.members or name == self.owner:
            return
        headers = self.team.headers[name if leave else self.owner]
        answer = self.team.client.delete(f"{self.team.base}/members/{self.ids[name]}", headers=headers)
        assert answer.status_code in (204, 409), answer.json
        if answer.status_code == 204:
            self.members.discard(name)

    @rule(person=st.integers(0, PEOPLE - 1))
    def transfer(self, person):
        name = self.names[person]
        if name not in self.members or name == self.owner:
            return
        answer = self.team.client.post(f"{self.team.base}/transfer", json={
            "user_id": self.ids[name], "password": PASSWORD}, headers=self.team.headers[self.owner])
        assert answer.status_code == 200, answer.json
        self.owner = name

    @rule(declines=st.booleans())
    def card(self, declines):
        if self.subscription is None:
            return
        card = "pm_card_chargeCustomerFail" if declines else "pm_card_visa"
        stripe = self.team.flow.stripe.v1
        customer = stripe.subscriptions.retrieve(self.subscription).customer
        method = stripe.payment_methods.attach(card, params={"customer": customer})
        stripe.subscriptions.update(self.subscription, params={"default_payment_method": method.id})
        self.card_declines = declines

    @precondition(lambda self: self.subscription is not None)
    @rule()
    def cancel(self):
        answer = self.team.client.post(f"{self.team.base}/subscription/cancel", json={"at_period_end": False},
                                       headers=self.team.headers[self.owner])
        assert answer.status_code == 200, answer.json
        self.subscription = None

    @precondition(lambda self: self.subscription is None)
    @rule()
    def resubscribe(self):
        headers = self.team.headers[self.owner]
        started = self.team.client.post(f"{self.team.base}/subscription/intent",
                                        json={"price": self.team.flow.prices["basic"]}, headers=headers)
        assert started.status_code == 201, started.json
        self.team.flow.pay(started.json["client_secret"], "pm_card_visa")
        self.subscription = started.json["subscription"]["id"]
        self.card_declines = False

    @invariant()
    def seats_are_members(self):
        if not hasattr(self, "team"):
            return
        self.team.flow.deliver()
        STEPS.append(self.run)
        assert self.team.members() == len(self.members), "the service's members are the model's"
        live = self._live()
        if live is not None:
            assert live["items"]["data"][0]["quantity"] == len(self.members), "Stripe's quantity == members"



@pytest.fixture
def live_config():
    """One owner makes an organisation per example, past the default per-person limits (tested on their own in
    tests/test_invitation_authority.py)."""
    return {"ORGANIZATION_CREATE_RATE_LIMIT": "1000 per day", "USER_INVITATION_RATE_LIMIT": "1000 per day"}


def test_seats_equal_members_after_every_step(live, emulator, stripe_client, prices):
    flow = start_flow(live, emulator, stripe_client, prices)
    Seats.flow = flow
    run_state_machine_as_test(Seats, settings=settings(
        max_examples=budget(3, 15), stateful_step_count=budget(10, 30), deadline=None, database=None,
        suppress_health_check=list(HealthCheck)))
    print(f"\nseat state machine: {len(STEPS)} steps in {len(set(STEPS))} organisations, "
          "Stripe's quantity == members after every one")
    assert STEPS
