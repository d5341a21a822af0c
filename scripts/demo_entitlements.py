"""``make demo``'s entitlements story (CONTRACT "Additions (sixth round)", "Entitlements"; docs/entitlements.md):
the app's backend takes AI tokens through ``POST /entitlements/check`` with its service key before each
completion; on the free plan the quota runs out and the consume is refused, the customer upgrades to the
metered ``api`` plan, the backend goes on past its limit (``overage``), and the renewal bills the api plan's
tokens once. ``make run``'s ``PLAN_FEATURES`` (scripts/dev.py) grants the quotas.

Her customer is on a test clock of its own, a minute behind this machine's time, and subscribes on it: the
metered units are timestamped with this machine's time, which must fall in her period (it starts on her clock)
and at most 5 minutes past her clock's time, as Stripe takes meter events
(https://docs.stripe.com/api/billing/meter-event/create, ``timestamp``).
"""
import secrets
import time

from scripts.demo_usage import PASSWORD, _show_renewal, _usage, checkout_api
from scripts.dev import METER_EVENT_NAME, PLAN_FEATURES

FEATURE = "ai.tokens"


def entitlements_story(demo):
    """Free quota, a refused consume, the upgrade to ``api``, consumes past its limit, the renewal's bill."""
    suffix, taken = secrets.token_hex(3), []
    email = f"eve-{suffix}@example.com"
    free, api = (PLAN_FEATURES[plan][FEATURE]["limit"] for plan in ("free", "api"))

    def consume(tokens, allowed):
        answer = demo.call("POST", "/entitlements/check", 200, headers=demo.backend, json={
            "customer": {"user": user}, "feature": FEATURE, "required": tokens, "consume": True,
            "identifier": f"completion-{suffix}-{len(taken)}"})
        taken.append(answer["consumed"])
        if answer["allowed"] is not allowed:
            raise SystemExit(f"expected allowed={allowed}, got {answer}")
        return answer

    demo.step(f"Entitlements: {email} signs up; on the free plan she has {free:,} {FEATURE} a month")
    credentials = {"email": email, "password": PASSWORD}
    user = demo.call("POST", "/auth/register", 201, json=credentials)["id"]
    token = demo.call("POST", "/auth/login", 200, json=credentials)["access_token"]
    demo.http.headers["Authorization"] = f"Bearer {token}"
    demo.step("Her app's backend takes each completion's tokens before calling the model (POST /entitlements/check, "
              "consume, with its service key): 600 fit, 600 more would not: refused, nothing taken")
    consume(600, True)
    consume(600, False)

    demo.step(f"She upgrades to the api plan in Checkout: {api:,} tokens a period, and past that each token billed "
              f"by the '{METER_EVENT_NAME}' meter (overage); card 4242 had its trial, so she pays now")
    clock = demo.stripe.v1.test_helpers.test_clocks.create(params={"frozen_time": int(time.time()) - 60,
                                                                   "name": "make demo: entitlements"}).id
    subscription_id = checkout_api(demo, clock)
    demo.until("her plan is api, paid", lambda: demo.me()["plan"] == "api"
               and demo.me()["subscription"]["status"] == "active")

    demo.step("The backend tries again (a new identifier): the api plan's limit applies at once; then a long "
              "completion goes past it, allowed and metered")
    before = sum(taken)
    consume(600, True)
    last = consume(1600, True)
    metered = sum(taken) - before
    print(f"    used {last['used']:,} of {last['limit']:,}: {max(last['used'] - last['limit'], 0):,} tokens of "
          f"overage; {metered:,} taken on the api plan, each reported to the meter")
    demo.until("the metered tokens are at Stripe", lambda: _usage(demo) == {"value": metered, "pending": 0},
               seconds=60)

    demo.step("A month passes on her clock: the renewal invoice bills the api plan's tokens, overage included, once "
              "(make run's metered price bills every token; a free first tier would bill the overage alone)")
    item = demo.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0]
    demo.advance_to(item.current_period_end, clock=clock)
    _show_renewal(demo, subscription_id, metered)
