"""Once per person, asked for two organisations at once (CONTRACT "Changes to the fifth round": "once per
person"): one person's requests for two organisations they own, released together by a barrier against the
live service (real HTTP, its threaded server), get a once-only promotion code and a trial once between them.

Each request holds its own organisation's lock; only the person's lock (``redemptions.lock_person``) puts the
second decision after the first's record. On SQLite (one writer) the same test checks the sequential rule.
"""
import json
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
import requests

from tests.signing import sign
from tests.support.billing import settle
from tests.support.organizations import Team
from tests.support.selling import URLS, complete, promotion


@pytest.fixture
def team(flow):
    return Team(flow)


@pytest.fixture
def trials(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=14)


def organizations(team):
    """Acme and a second organisation Ada creates: their URL prefixes."""
    made = team.client.post("/organizations", json={"name": "Beta"}, headers=team.ada)
    assert made.status_code == 201, made.json
    return [team.base, f"/organizations/{made.json['id']}"]


def together(team, action, body, prefixes=None):
    """``POST <prefix>/subscription/<action>`` with ``body`` for both organisations (``organizations`` unless
    given), released together; the answers."""
    prefixes = prefixes or organizations(team)
    start = Barrier(len(prefixes))  # both leave together, or the second would only see the first's result

    def post(prefix):
        start.wait()
        return requests.post(f"{team.flow.base_url}{prefix}/subscription/{action}", json=body, headers=team.ada,
                             timeout=60)

    with ThreadPoolExecutor(len(prefixes)) as pool:
        return list(pool.map(post, prefixes))


def discounted(flow, subscription_ids):
    """How many of the Stripe subscriptions carry a discount."""
    return sum(bool(flow.stripe.v1.subscriptions.retrieve(s).discounts) for s in subscription_ids)


def test_a_once_only_code_asked_for_two_organisations_at_once_is_redeemed_once(team):
    flow = team.flow
    promotion(flow, "ONCE", percent_off=50, duration="forever")  # "forever": the discount stays on the subscription
    answers = together(team, "intent", {"price": flow.prices["basic"], "promotion_code": "ONCE"})
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [201, 422], [answer.json() for answer in answers]
    refused = next(answer.json() for answer in answers if answer.status_code == 422)
    assert refused["error"]["code"] == "invalid_promotion_code", refused
    made = [answer.json()["subscription"]["id"] for answer in answers if answer.status_code == 201]
    assert discounted(flow, made) == 1


def test_a_trial_asked_for_two_organisations_at_once_is_granted_once(trials, team):
    flow = team.flow
    answers = together(team, "intent", {"price": flow.prices["basic"]})
    assert [answer.status_code for answer in answers] == [201, 201], [answer.json() for answer in answers]
    statuses = sorted(answer.json()["subscription"]["status"] for answer in answers)
    assert statuses == ["incomplete", "trialing"], "the person's one trial, for one of them"


def test_a_once_only_code_swapped_into_two_organisations_at_once_is_redeemed_once(team):
    flow = team.flow
    prefixes = organizations(team)
    for prefix in prefixes:
        started = team.client.post(f"{prefix}/subscription/intent", json={"price": flow.prices["basic"]},
                                   headers=team.ada)
        assert started.status_code == 201, started.json
        flow.pay(started.json["client_secret"])
        settle(flow)
    promotion(flow, "HALF", percent_off=50, duration="forever")
    answers = together(team, "swap", {"price": flow.prices["pro"], "promotion_code": "HALF"}, prefixes)
    assert sorted(answer.status_code for answer in answers) == [200, 422], [answer.json() for answer in answers]
    swapped = [answer.json()["subscription"]["id"] for answer in answers if answer.status_code == 200]
    assert discounted(flow, swapped) == 1


def deliver_together(flow, event_type):
    """Deliver the queued events of ``event_type`` at once, each from its own thread (signed as Stripe signs);
    the statuses. Stripe sends events concurrently, in no order (https://docs.stripe.com/webhooks#event-ordering)."""
    events = [json.dumps(event.to_dict(for_json=True)).encode()
              for event in flow.stripe.v1.events.list(params={"type": event_type, "limit": 10})]
    start = Barrier(len(events))
    secret = flow.app.config["PROVIDER_WEBHOOK_SECRET"][0]

    def post(payload):
        start.wait()
        return requests.post(f"{flow.base_url}/provider/webhook", data=payload, timeout=60, headers={
            "Content-Type": "application/json", "Stripe-Signature": sign(payload, secret=secret)}).status_code

    with ThreadPoolExecutor(len(events)) as pool:
        return list(pool.map(post, events))


def paid_together(team, body):
    """Checkout for both organisations at once, both pages paid (two cards), the completions delivered at once;
    the Stripe subscription ids."""
    flow = team.flow
    answers = together(team, "checkout", {"price": flow.prices["basic"], **URLS, **body})
    assert [answer.status_code for answer in answers] == [201, 201], [answer.json() for answer in answers]
    # Both pages offer what the person has not used yet: the card is known only at completion, which decides.
    done = [complete(flow, answer.json()["id"], card)
            for answer, card in zip(answers, ("pm_card_visa", "pm_card_mastercard"), strict=True)]
    assert deliver_together(flow, "checkout.session.completed") == [200, 200]
    settle(flow)
    return [session["subscription"] for session in done]


def test_checkouts_with_a_once_only_code_completed_at_once_keep_one_discount(team):
    flow = team.flow
    promotion(flow, "ONCE", percent_off=50, duration="forever")
    assert discounted(flow, paid_together(team, {"promotion_code": "ONCE"})) == 1


def test_checkouts_with_a_trial_completed_at_once_keep_one_trial(trials, team):
    flow = team.flow
    statuses = sorted(flow.stripe.v1.subscriptions.retrieve(s).status for s in paid_together(team, {}))
    assert statuses == ["active", "trialing"], "the second trial ended at once and its first period is charged"
