"""A member who leaves while the organisation's first payment is open is not billed for the period.

Review finding: accepting an invitation waits for that payment (``refuse_while_first_payment_open``), but a removal
or a leave did not: Stripe started the subscription at the quantity it was opened with, one seat above the members,
and ``flask reconcile`` set it back without a credit: 900 for a seat nobody had. Now the first invoice's
``invoice.paid`` gives the seat back at once, prorated as a removal. Through HTTP, the real stripe SDK and the
emulator's webhooks; amounts in minor units.
"""
import pytest

from tests.support.billing import start_flow
from tests.support.organizations import SEAT, Team, credit_waiting, me


@pytest.fixture
def team(live, emulator, stripe_client, prices):
    return Team(start_flow(live, emulator, stripe_client, prices))



def test_a_member_who_left_during_the_first_payment_is_given_back_once_it_is_paid(team):
    team.join("bob")
    started = team.client.post(f"{team.base}/subscription/intent", json={"price": team.flow.prices["basic"]},
                               headers=team.ada)
    assert started.status_code == 201, started.json
    subscription_id = started.json["subscription"]["id"]
    assert team.stripe_quantity(subscription_id) == 2
    left = team.client.delete(f"{team.base}/members/{me(team, 'bob')}", headers=team.headers["bob"])
    assert left.status_code == 204, left.json
    team.flow.pay(started.json["client_secret"])
    team.flow.deliver()
    assert team.stripe_quantity(subscription_id) == team.members() == 1
    assert 0 < credit_waiting(team, subscription_id) <= SEAT, "the seat paid for nobody is credited"
    reconciled = team.app.test_cli_runner().invoke(args=["reconcile"])
    assert reconciled.exit_code == 0 and "seats" not in reconciled.output, reconciled.output
