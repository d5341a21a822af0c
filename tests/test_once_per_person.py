"""Once per person (CONTRACT "Additions (sixth round)" -> "Changes to the fifth round"): promotion-code
redemptions and trials are kept for the person who acts and the card's fingerprint, whichever billable
they act for, so an organisation a user creates resets neither.

Attacks by a user on their own money: through HTTP, the real stripe SDK and the emulator, as
tests/test_organization_attacks.py.
"""
import pytest

from tests.support.billing import another_user, code_refused, settle
from tests.support.organizations import Team
from tests.support.selling import URLS, complete, promotion


@pytest.fixture
def team(flow):
    return Team(flow)


def organization(team, name):
    """Another organisation Ada creates; return its URL prefix."""
    made = team.client.post("/organizations", json={"name": name}, headers=team.ada)
    assert made.status_code == 201, made.json
    return f"/organizations/{made.json['id']}"


def start(flow, prefix="", code=None, headers=None):
    """``POST <prefix>/subscription/intent`` for the basic plan, with ``code``; return the response."""
    body = {"price": flow.prices["basic"], **({"promotion_code": code} if code else {})}
    return flow.client.post(f"{prefix}/subscription/intent", json=body, headers=headers or flow.headers)


def open_checkout(flow, prefix="", code=None, headers=None):
    body = {"price": flow.prices["basic"], **URLS, **({"promotion_code": code} if code else {})}
    response = flow.client.post(f"{prefix}/subscription/checkout", json=body, headers=headers or flow.headers)
    assert response.status_code == 201, response.json
    return response.json["id"]


def paid(flow, response):
    assert response.status_code == 201, response.json
    flow.pay(response.json["client_secret"])
    settle(flow)
    return response.json["subscription"]


# -- promotion codes --------------------------------------------------------------------------------

def test_a_code_the_person_redeemed_is_refused_for_every_organisation_they_create(team):
    flow = team.flow
    promotion(flow, "ONCE", percent_off=50, duration="once")
    paid(flow, start(flow, code="ONCE"))
    assert code_refused(start(flow, code="ONCE")), "refused to the person"
    assert code_refused(start(flow, team.base, code="ONCE")), "and to the organisation they own"
    assert code_refused(flow.client.post(f"{organization(team, 'Beta')}/subscription/checkout", json={
        "price": flow.prices["basic"], "promotion_code": "ONCE", **URLS}, headers=team.ada)), "and to the next one"


def test_a_code_redeemed_for_an_organisation_is_the_persons_redemption(team):
    flow = team.flow
    promotion(flow, "ONCE", percent_off=50, duration="once")
    paid(flow, start(flow, team.base, code="ONCE"))
    assert code_refused(start(flow, code="ONCE")), "refused to the person who redeemed it for Acme"
    assert code_refused(start(flow, organization(team, "Beta"), code="ONCE"))


def test_a_code_taken_with_a_swap_for_an_organisation_is_the_persons_too(team):
    flow = team.flow
    promotion(flow, "HALF", percent_off=50, duration="forever")
    team.subscribe()
    swapped = flow.client.post(f"{team.base}/subscription/swap", json={"price": flow.prices["pro"],
                                                                      "promotion_code": "HALF"}, headers=team.ada)
    assert swapped.status_code == 200, swapped.json
    assert code_refused(start(flow, code="HALF"))


def test_a_code_is_taken_off_a_checkout_paid_with_a_card_that_redeemed_it(flow):
    promotion(flow, "HALF", percent_off=50, duration="forever")
    complete(flow, open_checkout(flow, code="HALF"))
    settle(flow)
    bob = another_user(flow, "bob@example.com")
    # Bob never redeemed it, so his page offers it; the card he pays with is Ada's, known only at completion.
    done = complete(bob, open_checkout(bob, code="HALF", headers=bob.headers))
    assert done["amount_total"] == done["amount_subtotal"] // 2, "what the page charged stays paid"
    settle(bob)
    live = bob.stripe.v1.subscriptions.retrieve(done["subscription"])
    assert live.discounts == [], "every later invoice is in full"
    assert bob.me()["subscription"]["discount"] is None


# -- trials -----------------------------------------------------------------------------------------

@pytest.fixture
def trials(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=14)


def test_an_organisation_a_user_creates_gets_no_second_trial(trials, team):
    flow = team.flow
    assert start(flow).json["subscription"]["status"] == "trialing"
    assert start(flow, team.base).json["subscription"]["status"] == "incomplete", "Ada's trial was hers"
    done = complete(flow, open_checkout(flow, organization(team, "Beta")), card="pm_card_mastercard")
    assert done["amount_total"] == done["amount_subtotal"] > 0, "nor on Stripe's page: it charged the period"
    settle(flow)
    assert flow.stripe.v1.subscriptions.retrieve(done["subscription"]).status == "active"


def test_a_trial_taken_for_an_organisation_is_the_persons_trial(trials, team):
    flow = team.flow
    assert start(flow, team.base).json["subscription"]["status"] == "trialing"
    assert start(flow).json["subscription"]["status"] == "incomplete"


def test_checkouts_opened_side_by_side_for_two_organisations_carry_one_trial(trials, team):
    flow = team.flow
    beta = organization(team, "Beta")
    first, second = open_checkout(flow, team.base), open_checkout(flow, beta)
    complete(flow, first, card="pm_card_visa")
    settle(flow)
    # Another card: the one-trial-per-card rule alone would let this second trial run.
    done = complete(flow, second, card="pm_card_mastercard")
    settle(flow)
    statuses = [flow.stripe.v1.subscriptions.retrieve(subscription_id).status
                for subscription_id in (flow.stripe.v1.checkout.sessions.retrieve(first).subscription,
                                        done["subscription"])]
    assert statuses == ["trialing", "active"], "the second trial ended at once and its first period is charged"
