"""An organisation whose renewal payment failed (``past_due``) adds no seat and credits none it removes.

Review finding: seat changes skipped the dunning rule a user's own change keeps (``current.priced``): an accept
charged a new seat to the card that had just failed, and its invoice, made the subscription's
``latest_invoice``, was the one a cancel voided, leaving the unpaid renewal collectable after the cancel; a
removal credited the unused time of a period never paid. Through HTTP, the real stripe SDK and the emulator's
webhooks; amounts in minor units.
"""
import pytest

from tests.support.billing import start_flow
from tests.support.organizations import Team, charged, credit_waiting, me


@pytest.fixture
def team(live, emulator, stripe_client, prices):
    return Team(start_flow(live, emulator, stripe_client, prices))


def past_due(team, subscription_id):
    team.flow.emulator.fail_next_renewal(subscription_id)
    team.flow.emulator.advance(31 * 86400)
    team.flow.deliver()
    assert team.client.get(team.base, headers=team.ada).json["subscription"]["status"] == "past_due"


def test_an_invitation_accepted_in_dunning_adds_no_seat_and_stays_valid(team):
    subscription_id = team.subscribe()
    past_due(team, subscription_id)
    before = charged(team, subscription_id)
    team.person("cy")
    invitation = team.invite("cy")
    refused = team.accept("cy", invitation)
    assert refused.status_code == 409, refused.json
    assert refused.json["error"]["code"] == "subscription_past_due", refused.json
    assert team.stripe_quantity(subscription_id) == team.members() == 1
    assert charged(team, subscription_id) == before
    assert team.flow.stripe.v1.subscriptions.retrieve(subscription_id).pending_update is None
    listed = team.client.get(f"{team.base}/invitations", headers=team.ada).json["data"]
    assert [i["id"] for i in listed] == [invitation["id"]], "the invitation stays valid"


def test_a_member_removed_in_dunning_leaves_no_credit_for_the_unpaid_period(team):
    team.join("bob")
    team.join("cy")
    subscription_id = team.subscribe()
    team.flow.emulator.advance(10 * 86400)
    removed = team.client.delete(f"{team.base}/members/{me(team, 'bob')}", headers=team.ada)
    assert removed.status_code == 204, removed.json
    paid_credit = credit_waiting(team, subscription_id)
    assert paid_credit > 0, "a paid period's unused seat is credited"
    past_due(team, subscription_id)
    left = team.client.delete(f"{team.base}/members/{me(team, 'cy')}", headers=team.headers["cy"])
    assert left.status_code == 204, left.json
    assert team.stripe_quantity(subscription_id) == team.members() == 1
    assert credit_waiting(team, subscription_id) == 0, "no credit for a period never paid"
