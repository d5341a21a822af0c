"""Plan changes at the period's end delivered shuffled and partly twice (issue 45): each ends as in-order delivery.

Six users subscribe to ``pro``. Each schedules ``basic`` for the period's end, withdraws it, schedules it again
(``POST /subscription/swap`` with ``"at": "period_end"``, ``DELETE /subscription/scheduled-change``), and the
emulator's clock passes the renewal, where Stripe's schedule starts the new phase. Their webhooks wait meanwhile
(``subscription_schedule.created`` / ``.updated`` / ``.released``, ``customer.subscription.updated``, the renewal's
invoice events). Half the users, the control, get theirs in creation order, one at a time; the other half get theirs
shuffled, 30 % of them twice, from eight threads to four gunicorn workers (Stripe's delivery: "Stripe doesn't
guarantee the delivery of events in the order that they're generated", https://docs.stripe.com/webhooks#event-ordering).
Every delivery must be 2xx and each shuffled user must end as its control twin: plan, price, ``scheduled_change``, and
the notifications counted by kind (``plan_change_scheduled``, ``plan_change_withdrawn``, ``plan_changed``, ...).
"""
import random
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.support.accounts import bearer, login, register
from tests.support.reliability import count_reorderings, customer_of, deliver_until_accepted, provider_events

PAIRS = 3
KINDS = ("plan_change_scheduled", "plan_change_withdrawn", "plan_changed")


def _call(client, method, path, headers, body=None):
    response = getattr(client, method)(path, json=body, headers=headers)
    assert response.status_code == 200, (path, response.json)
    return response.json


def _subscribe(client, stripe_client, prices, number):
    """A user subscribed to ``pro`` and paid; return ``(headers, customer id, period end)``."""
    email = f"schedule{number}@example.com"
    register(client, email=email, name=f"Schedule {number}")
    headers = bearer(login(client, email=email))
    started = client.post("/subscription/intent", json={"price": prices["pro"]}, headers=headers)
    assert started.status_code == 201, started.json
    intent = started.json["client_secret"].split("_secret_")[0]
    stripe_client.v1.payment_intents.confirm(intent, params={"payment_method": "pm_card_visa"})
    live = stripe_client.v1.subscriptions.retrieve(started.json["subscription"]["id"])
    return headers, live.customer, live["items"].data[0].current_period_end


def _schedule_withdraw_schedule(client, headers, price):
    later = {"price": price, "at": "period_end"}
    assert _call(client, "post", "/subscription/swap", headers, later)["scheduled_change"]["price"] == price
    withdrawn = _call(client, "delete", "/subscription/scheduled-change", headers)
    assert withdrawn["subscription"]["scheduled_change"] is None
    _call(client, "post", "/subscription/swap", headers, later)


def _outcome(client, headers):
    shown = _call(client, "get", "/subscription", headers)
    kinds = Counter(n["kind"] for n in _call(client, "get", "/notifications?limit=100", headers)["data"])
    return shown["plan"], shown["subscription"]["price"], shown["subscription"]["scheduled_change"], kinds


def test_period_end_changes_delivered_shuffled_and_partly_twice_end_as_in_order_delivery(
        gunicorn, app, emulator, stripe_client, prices, tally):
    emulator.pause_delivery()
    client = app.test_client()
    users = [_subscribe(client, stripe_client, prices, number) for number in range(2 * PAIRS)]
    setup = provider_events(stripe_client)
    with requests.Session() as session:  # the subscriptions exist and are active before anything is scheduled
        assert {deliver_until_accepted(gunicorn.url, e, tally, session=session).status_code for e in setup} == {200}
    for headers, _, _ in users:
        _schedule_withdraw_schedule(client, headers, prices["basic"])
    emulator.advance(max(end for _, _, end in users) - emulator.clock() + 60)  # the renewal: the new phase starts

    events = provider_events(stripe_client)[len(setup):]
    for order, event in enumerate(events):
        event["_order"] = order
    shuffled_customers = {customer for index, (_, customer, _) in enumerate(users) if index % 2}
    in_order = [e for e in events if customer_of(e) not in shuffled_customers]
    rng = random.Random(20261129)
    deliveries = [e for e in events if customer_of(e) in shuffled_customers
                  for _ in range(2 if rng.random() < 0.3 else 1)]
    rng.shuffle(deliveries)
    assert {e["type"] for e in deliveries} >= {"subscription_schedule.created", "subscription_schedule.released",
                                               "subscription_schedule.updated", "customer.subscription.updated"}
    tally["lifecycle_events"] += len(events)
    tally["duplicate_deliveries"] += len(deliveries) - (len(events) - len(in_order))
    tally["reordered_deliveries"] += count_reorderings(deliveries)
    tally["parallel_requests"] += len(deliveries)

    strip = lambda e: {k: v for k, v in e.items() if k != "_order"}  # noqa: E731
    with requests.Session() as session:
        answers = [deliver_until_accepted(gunicorn.url, strip(e), tally, session=session) for e in in_order]
        with ThreadPoolExecutor(8) as pool:
            answers += list(pool.map(
                lambda e: deliver_until_accepted(gunicorn.url, strip(e), tally, session=session), deliveries))
    assert {a.status_code for a in answers} == {200}

    outcomes = [_outcome(client, headers) for headers, _, _ in users]
    control = outcomes[0]
    assert control[:3] == ("basic", prices["basic"], None), "in order, the change applied at the renewal"
    assert all(control[3][kind] for kind in KINDS), control[3]
    wrong = [index for index in range(1, 2 * PAIRS, 2) if outcomes[index] != outcomes[index - 1]]
    tally["lost_updates"] += len(wrong)
    assert not wrong, [(outcomes[index - 1], outcomes[index]) for index in wrong]
