"""``make demo``'s usage story (CONTRACT "Usage-based billing"): the app's backend reports the tokens a
customer used with a service key, sending again what it is not sure arrived; the usage page shows them;
the renewal invoice bills each token once. Uses the ``Demo``'s helpers (calls, test clocks).

Its customer lives on a test clock of the demo's own that starts 15 days back (Stripe's test clocks can
hold objects "at a frozen time in the past or future", https://docs.stripe.com/api/test_clocks/object)
and is moved to the present before the backend reports: usage is timestamped now, which the service and
Stripe take only from the past 35 days to 5 minutes ahead (in the customer's clock time at Stripe), and a
trial's usage is never billed (https://docs.stripe.com/billing/subscriptions/usage-based/pricing-models,
"Free trials"), so any trial must be over by then (make run's first subscriptions get 14 days).
"""
import os
import secrets
import subprocess
import sys
import uuid

import requests

from scripts.dev import METER_EVENT_NAME, ROOT, SETTINGS

DAY = 86400
PASSWORD = "demo password 1"
# The tokens of three chat completions, then of a fourth sent with a copy of the second.
FIRST, LATER = (1200, 800, 350), 650
# One key for the backend's two jobs: reporting usage here, taking quota in the entitlements story.
ABILITIES = ("usage:write", "entitlements:check")


def usage_story(demo):
    """Subscribe to the metered ``api`` plan on a clock of its own, report tokens with retries and duplicates,
    read the usage page, and check that the renewal invoice bills the sum once."""
    suffix = secrets.token_hex(3)
    email = f"uma-{suffix}@example.com"
    now = requests.get(f"{demo.emulator}/_emulator/clock", timeout=30).json()["now"]
    clock = demo.stripe.v1.test_helpers.test_clocks.create(params={"frozen_time": now - 15 * DAY,
                                                                   "name": "make demo: usage"}).id
    demo.step(f"Usage: {email} buys the api plan (5.00 a month, and 0.01 a token counted by Stripe's "
              f"'{METER_EVENT_NAME}' meter) in Checkout; her customer lives on test clock {clock}, 15 days back")
    subscription_id = _subscribe(demo, email, clock)
    demo.step("Her clock moves to the present: a trial, if she got one, is over and a paid period runs")
    demo.advance_to(requests.get(f"{demo.emulator}/_emulator/clock", timeout=30).json()["now"], clock=clock)
    demo.until("the subscription is active", lambda: demo.me()["subscription"]["status"] == "active")

    demo.step("The operator gives the app's backend a service key (flask create-service-key), shown once; it "
              "reports usage and, in the entitlements story, takes quota")
    backend = demo.backend = {"Authorization": f"Bearer {_service_key(demo, f'chat-backend-{suffix}')}"}
    user = demo.me()["id"]
    events = [_event(user, f"chat-{suffix}-{n}", tokens) for n, tokens in enumerate(FIRST)]
    # Stripe records the first two deliveries but their answers are lost (the emulator's fault injection, as a
    # network would): they are sent again, and Stripe knows them by their identifiers, so each counts once.
    requests.post(f"{demo.emulator}/_emulator/faults", json={
        "path_prefix": "/v1/billing/meter_events", "status": 500, "count": 2, "after": True},
                  timeout=30).raise_for_status()
    demo.step("The backend reports three completions' tokens in one batch (each identifier is the idempotency key)")
    demo.call("POST", "/usage/events", 202, headers=backend, json={"events": events})
    demo.step("Its answer timed out, so the backend sends the same batch again: nothing counts twice")
    demo.call("POST", "/usage/events", 202, headers=backend, json={"events": events})
    demo.step("A fourth completion, sent with the second again (the backend is not sure that one arrived)")
    later = _event(user, f"chat-{suffix}-{len(FIRST)}", LATER)
    demo.call("POST", "/usage/events", 202, headers=backend, json={"events": [later, events[1]]})
    total = sum(FIRST) + LATER

    demo.step(f"The usage page: Stripe's meter summary for the period (value) and what the worker has not "
              f"delivered yet (pending), {total} tokens in all; eventually consistent, as Stripe's summaries are")
    demo.call("GET", "/usage", 200)
    demo.until("every token is at Stripe (the worker rode out the lost answers)",
               lambda: _usage(demo) == {"value": total, "pending": 0}, seconds=60)
    demo.call("GET", "/usage", 200)

    demo.step("A month passes on her clock: the renewal invoice bills the period's tokens, each once")
    item = demo.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0]
    demo.advance_to(item.current_period_end, clock=clock)
    _show_renewal(demo, subscription_id, total)


def _subscribe(demo, email, clock):
    """Register ``email``, subscribe to the ``api`` plan in Checkout on ``clock`` with card 4242; return the
    subscription's id once the service announced it."""
    credentials = {"email": email, "password": PASSWORD}
    demo.call("POST", "/auth/register", 201, json=credentials)
    token = demo.call("POST", "/auth/login", 200, json=credentials)["access_token"]
    demo.http.headers["Authorization"] = f"Bearer {token}"
    return checkout_api(demo, clock)


def checkout_api(demo, clock):
    """Subscribe the logged-in user to the ``api`` plan in Checkout on ``clock`` with card 4242; return the
    subscription's id once the service announced it."""
    session = demo.call("POST", "/subscription/checkout", 201, headers={"Idempotency-Key": str(uuid.uuid4())},
                        json={"price": demo.prices["api"], "success_url": "http://localhost:3000/welcome",
                              "cancel_url": "http://localhost:3000/plans"})
    # On her clock before she pays, so that her subscription is dated by it.
    demo.on_own_clock(customer=demo.stripe.v1.checkout.sessions.retrieve(session["id"]).customer, clock=clock)
    requests.post(f"{demo.emulator}/_emulator/checkout_sessions/{session['id']}/complete",
                  json={"payment_method": "pm_card_visa"}, timeout=30).raise_for_status()
    demo.until("the subscription is announced", lambda: {"subscribed", "trial_started"} & set(demo.kinds()))
    subscription_id = demo.call("GET", "/subscription", 200)["subscription"]["id"]
    lines = demo.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data
    print("    items: " + ", ".join(f"{line.price.id} ({line.price.recurring.usage_type})" for line in lines))
    return subscription_id


def _service_key(demo, name):
    """``flask create-service-key name`` with ``ABILITIES`` in the stack's environment; return the key it printed."""
    env = {**os.environ, **demo.env, **SETTINGS}
    abilities = [arg for ability in ABILITIES for arg in ("--ability", ability)]
    made = subprocess.run([sys.executable, "-m", "flask", "create-service-key", name, *abilities], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    if made.returncode:
        raise SystemExit(f"flask create-service-key failed: {made.stderr.strip() or made.stdout.strip()}")
    key = made.stdout.strip().splitlines()[-1]
    print(f"    $ flask create-service-key {name} {' '.join(abilities)}\n"
          f"    {key.split('|')[0]}|svc_... (only its digest is stored)")
    return key


def _event(user, identifier, tokens):
    return {"identifier": identifier, "event_name": METER_EVENT_NAME, "customer": {"user": user}, "value": tokens}


def _usage(demo):
    """The usage page's ``tokens`` row as ``{"value", "pending"}``."""
    rows = demo.http.get(demo.base + "/usage", timeout=30).json()["data"]
    return next(({"value": row["value"], "pending": row["pending"]} for row in rows
                 if row["event_name"] == METER_EVENT_NAME), None)


def _show_renewal(demo, subscription_id, total):
    """Print the renewal invoice's lines; stop the demo unless its usage line bills ``total`` tokens once."""
    invoice = demo.stripe.v1.subscriptions.retrieve(subscription_id, params={"expand": ["latest_invoice"]}
                                                    ).latest_invoice
    for line in invoice.lines.data:
        print(f"    {line.description}: {line.amount / 100:.2f} {invoice.currency.upper()}")
    print(f"    {invoice.billing_reason}, {invoice.status}: total {invoice.total / 100:.2f} "
          f"{invoice.currency.upper()}")
    billed = [line.quantity for line in invoice.lines.data if line.pricing.price_details.price != demo.prices["api"]]
    if invoice.billing_reason != "subscription_cycle" or billed != [total]:
        raise SystemExit(f"expected the renewal to bill {total} tokens once, got {billed}")
    print(f"    billed once: {total} tokens")
