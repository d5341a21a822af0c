"""``make demo``'s period-end change (CONTRACT "Additions (sixth round)", "Plan changes at the period's end"): the
Checkout customer's downgrade scheduled as a Stripe subscription schedule, withdrawn, scheduled again, and
applied when the period ends on the demo's clock, her launch code still applied. ``scheduled_change`` is what
Stripe's schedule says, as every field of the subscription."""
import json


def period_end_story(demo, subscription_id):
    """Schedule pro -> basic at the period's end, withdraw it, schedule it again, renew: the plan is basic."""
    swap = {"price": demo.prices["basic"], "at": "period_end"}
    demo.step("A downgrade to basic at the period's end (a Stripe subscription schedule): pro until then, "
              "nothing charged now")
    change = demo.call("POST", "/subscription/swap", 200, json=swap)["scheduled_change"]
    print(f"    scheduled_change: {json.dumps(change)}")
    demo.step("Withdrawn (the schedule is released), then scheduled again")
    demo.call("DELETE", "/subscription/scheduled-change", 200)
    demo.until("plan_change_withdrawn notification", lambda: "plan_change_withdrawn" in demo.kinds())
    change = demo.call("POST", "/subscription/swap", 200, json=swap)["scheduled_change"]
    print(f"    scheduled_change: {json.dumps(change)}")
    demo.step("The period ends on the demo's clock: the schedule's next phase starts, renewed at basic's price "
              "less her 20 % code")
    demo.advance_to(demo.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end)
    demo.until("plan is basic", lambda: demo.me()["plan"] == "basic")
    subscription = demo.call("GET", "/subscription", 200)["subscription"]
    print(f"    plan {subscription['plan']} ({subscription['price']}); scheduled_change "
          f"{json.dumps(subscription['scheduled_change'])}")
    invoice = demo.call("GET", "/subscription/invoices?limit=1", 200)["data"][0]
    figures = ", ".join(f"{name} {invoice[name] / 100:.2f}" for name in ("subtotal", "tax", "total", "amount_paid"))
    print(f"    the renewal: {figures} {invoice['currency'].upper()}")
