"""A member who leaves before the organisation's subscription is first billed is not billed for the period.

Review finding: accepting an invitation waits for the first payment (``refuse_while_first_payment_open``), but a
removal or a leave did not: Stripe started the subscription at the quantity it was opened with, one seat above the
members, and ``flask reconcile`` set it back without a credit: 900 for a seat nobody had. The same for a trial
paused for its card, which bills its seats when a card resumes it. Now the first invoice's ``invoice.paid`` (an
intent's or a Checkout's) and ``customer.subscription.resumed`` give the seat back at once, prorated as a removal.
Through HTTP, the real stripe SDK and the emulator's webhooks; amounts in minor units.
"""
import pytest

from tests.support.billing import settle, start_flow
from tests.support.organizations import SEAT, Team, credit_waiting, me
from tests.support.selling import URLS, complete


@pytest.fixture
def team(live, emulator, stripe_client, prices):
    return Team(start_flow(live, emulator, stripe_client, prices))


def leave(team, name):
    left = team.client.delete(f"{team.base}/members/{me(team, name)}", headers=team.headers[name])
    assert left.status_code == 204, left.json


def given_back(team, subscription_id):
    """One seat billed, one credited nearly whole (the first period's unused time), nothing left to reconcile."""
    assert team.stripe_quantity(subscription_id) == team.members() == 1
    assert 0 < credit_waiting(team, subscription_id) <= SEAT, "the seat paid for nobody is credited"
    reconciled = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert reconciled.exit_code == 0 and "seats" not in reconciled.output, reconciled.output


@pytest.mark.parametrize("page", ["intent", "checkout"])
def test_a_member_who_left_during_the_first_payment_is_given_back_once_it_is_paid(team, page):
    team.join("bob")
    body = {"price": team.flow.prices["basic"], **(URLS if page == "checkout" else {})}
    opened = team.client.post(f"{team.base}/subscription/{page}", json=body, headers=team.ada)
    assert opened.status_code == 201, opened.json
    leave(team, "bob")
    if page == "intent":
        subscription_id = opened.json["subscription"]["id"]
        assert team.stripe_quantity(subscription_id) == 2, "opened at the members then"
        team.flow.pay(opened.json["client_secret"])
    else:
        subscription_id = complete(team.flow, opened.json["id"])["subscription"]
    team.flow.deliver()
    given_back(team, subscription_id)


def test_a_member_who_left_while_the_trial_was_paused_is_given_back_when_a_card_resumes_it(team, configure):
    configure(PROVIDER_TRIAL_DAYS=14)
    team.join("bob")
    started = team.client.post(f"{team.base}/subscription/intent", json={"price": team.flow.prices["basic"]},
                               headers=team.ada)
    assert started.status_code == 201 and started.json["subscription"]["status"] == "trialing", started.json
    subscription_id = started.json["subscription"]["id"]
    settle(team.flow)
    trial_end = team.flow.stripe.v1.subscriptions.retrieve(subscription_id).trial_end
    team.flow.emulator.advance(trial_end - team.flow.emulator.clock() + 1)
    settle(team.flow)
    assert team.client.get(team.base, headers=team.ada).json["subscription"]["status"] == "paused"
    leave(team, "bob")
    assert team.stripe_quantity(subscription_id) == 2, "paused: nothing changes at Stripe"
    secret = team.client.post(f"{team.base}/subscription/payment-method", json={}, headers=team.ada)
    assert secret.status_code == 201, secret.json
    team.flow.stripe.v1.setup_intents.confirm(secret.json["client_secret"].split("_secret_")[0],
                                              params={"payment_method": "pm_card_visa"})
    assert "customer.subscription.resumed" in settle(team.flow)
    given_back(team, subscription_id)
