"""Plan changes at the period's end (issue 45; CONTRACT "Plan changes at the period's end"), through HTTP, the real
stripe SDK, the emulator's subscription schedules and real webhooks.

A downgrade scheduled for the period's end keeps what was paid for until then and charges nothing now; the renewal
bills the new price with the subscription's discount; ``scheduled_change`` comes only from Stripe's schedule (the
change's answer, webhooks, sync), whatever order and however often the webhooks arrive.
"""
import json
import random

from app.billing.call_costs import PROVIDER_CALL_COSTS
from app.extensions import db
from app.models import Notification, Organization, Subscription, WebhookEvent
from app.subscription import schedules
from tests.support.billing import (  # noqa: F401 (prices: the five plans)
    DAY,
    invoices,
    live_schedule,
    measured,
    post,
    prices,
    renews_on_basic,
    start_flow,
    state,
    subscribe,
    to_period_end,
)
from tests.support.events import deliver
from tests.support.organizations import Team


def swap_later(flow, plan, expect=200, path="/subscription/swap"):
    return post(flow, path, {"price": flow.prices[plan], "at": "period_end"}, expect=expect).json


def stored_change(flow, subscription_id):
    with flow.app.app_context():
        return db.session.scalars(db.select(Subscription.scheduled_change)
                                  .where(Subscription.provider_id == subscription_id)).one()


def kinds(flow):
    """The plan change notifications stored, sorted."""
    with flow.app.app_context():
        return sorted(db.session.scalars(db.select(Notification.kind)
                                         .where(Notification.kind.startswith("plan_change_"))).all())


def test_a_period_end_downgrade_charges_nothing_now_and_the_renewal_bills_the_new_price(flow):
    subscription_id = subscribe(flow, "pro")
    paid = len(invoices(flow, subscription_id))
    answer = swap_later(flow, "basic")
    end = answer["subscription"]["current_period_end"]
    assert answer["scheduled_change"] == {"price": flow.prices["basic"], "plan": "basic", "quantity": 1, "at": end}
    assert (answer["subscription"]["price"], answer["pending_update"]) == (flow.prices["pro"], None)
    schedule = live_schedule(flow, subscription_id)
    assert (schedule.end_behavior, schedule.metadata["managed_by"]) == ("release", "subscription-service")
    assert [p["items"][0]["price"] for p in schedule.phases] == [flow.prices["pro"], flow.prices["basic"]]
    flow.deliver()
    assert state(flow)["subscription"]["scheduled_change"]["price"] == flow.prices["basic"]
    assert "plan_change_scheduled" in flow.notifications()
    flow.emulator.advance(20 * DAY)
    flow.deliver()
    assert len(invoices(flow, subscription_id)) == paid, "nothing is charged before the period's end"
    assert state(flow)["plan"] == "pro"

    renews_on_basic(flow, subscription_id)


def test_the_next_phase_carries_the_discount_and_the_preview_shows_it(flow):
    coupon = flow.stripe.v1.coupons.create(params={"percent_off": 50, "duration": "forever"})
    flow.stripe.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": coupon.id},
                                                  "code": "HALF"})
    started = flow.client.post("/subscription/intent", json={"price": flow.prices["pro"], "promotion_code": "HALF"},
                               headers=flow.headers).json
    flow.pay(started["client_secret"])
    flow.deliver()
    subscription_id = started["subscription"]["id"]
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['basic']}&at=period_end",
                              headers=flow.headers)
    assert preview.status_code == 200, preview.json
    assert (preview.json["amount_due"], preview.json["proration_date"]) == (450, None)
    swap_later(flow, "basic")
    to_period_end(flow, subscription_id)
    renewal = invoices(flow, subscription_id)[0]
    assert (renewal.billing_reason, renewal.amount_due) == ("subscription_cycle", 450), "the discount carried on"
    assert state(flow)["subscription"]["discount"]["coupon"]["percent_off"] == 50


def test_withdraw_releases_the_schedule_and_the_old_price_renews(flow):
    subscription_id = subscribe(flow, "pro")
    swap_later(flow, "basic")
    flow.deliver()
    response = flow.client.delete("/subscription/scheduled-change", headers=flow.headers)
    assert response.status_code == 200, response.json
    assert response.json["subscription"]["scheduled_change"] is None
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).schedule is None
    flow.deliver()
    assert flow.notifications()[:2] == ["plan_change_withdrawn", "plan_change_scheduled"]
    to_period_end(flow, subscription_id)
    assert state(flow)["plan"] == "pro"
    assert invoices(flow, subscription_id)[0].amount_due == 2900


def test_a_second_period_end_swap_replaces_the_change(flow):
    subscription_id = subscribe(flow, "max")
    swap_later(flow, "basic")
    answer = swap_later(flow, "team")
    assert answer["scheduled_change"]["price"] == flow.prices["team"]
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    running = [s for s in flow.stripe.v1.subscription_schedules.list(params={"customer": customer}).data
               if s.status == "active"]
    assert len(running) == 1
    to_period_end(flow, subscription_id)
    assert (state(flow)["plan"], invoices(flow, subscription_id)[0].amount_due) == ("team", 4900)


def test_a_swap_now_while_a_change_is_scheduled_is_409(flow):
    subscribe(flow, "pro")
    swap_later(flow, "basic")
    refused = post(flow, "/subscription/swap", {"price": flow.prices["max"]}, expect=409).json["error"]
    assert (refused["code"], refused["details"]["price"]) == ("change_scheduled", flow.prices["basic"])
    assert post(flow, "/subscription/swap", {"price": flow.prices["basic"], "at": "period_end",
                                             "promotion_code": "X"}, expect=422)


def test_a_schedule_made_elsewhere_is_shown_never_changed(flow):
    subscription_id = subscribe(flow, "pro")
    schedule = flow.stripe.v1.subscription_schedules.create(params={"from_subscription": subscription_id})
    phase = schedule.phases[0]
    flow.stripe.v1.subscription_schedules.update(schedule.id, params={"phases": [
        {"start_date": phase.start_date, "end_date": phase.end_date,
         "items": [{"price": flow.prices["pro"], "quantity": 1}]},
        {"items": [{"price": flow.prices["basic"], "quantity": 1}], "duration": {"interval": "month"}}]})
    flow.deliver()
    assert state(flow)["subscription"]["scheduled_change"]["price"] == flow.prices["basic"]
    for method, path, body in (("post", "/subscription/swap", {"price": flow.prices["team"], "at": "period_end"}),
                               ("delete", "/subscription/scheduled-change", None),
                               ("post", "/subscription/cancel", {})):
        response = getattr(flow.client, method)(path, json=body, headers=flow.headers)
        assert (response.status_code, response.json["error"]["code"]) == (409, "schedule_not_ours"), path
    assert flow.stripe.v1.subscription_schedules.retrieve(schedule.id).status == "active"


def test_cancelling_at_the_period_end_releases_the_schedule_first(flow):
    subscription_id = subscribe(flow, "pro")
    swap_later(flow, "basic")
    answer = post(flow, "/subscription/cancel", {}).json["subscription"]
    assert (answer["cancel_at_period_end"], answer["scheduled_change"]) == (True, None)
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).schedule is None


def test_seats_changed_while_a_change_is_scheduled_follow_into_the_next_phase(flow):
    subscription_id = subscribe(flow, "pro")
    swap_later(flow, "basic")
    status, calls = measured(flow, lambda: post(flow, "/subscription/quantity", {"quantity": 3}))
    assert status == 200 and calls <= PROVIDER_CALL_COSTS["subscription.quantity"], calls
    schedule = live_schedule(flow, subscription_id)
    assert [p["items"][0]["quantity"] for p in schedule.phases] == [3, 3]
    assert state(flow)["subscription"]["scheduled_change"]["quantity"] == 3
    to_period_end(flow, subscription_id)
    assert invoices(flow, subscription_id)[0].amount_due == 3 * 900


def test_schedule_webhooks_replayed_shuffled_and_twice_converge_on_stripes_schedule(flow):
    subscription_id = subscribe(flow, "max")
    swap_later(flow, "basic")
    swap_later(flow, "team")
    assert flow.client.delete("/subscription/scheduled-change", headers=flow.headers).status_code == 200
    swap_later(flow, "pro")
    flow.deliver()
    expected, notified = stored_change(flow, subscription_id), kinds(flow)
    assert expected["price"] == flow.prices["pro"]
    secret = flow.app.config["PROVIDER_WEBHOOK_SECRET"]
    secret = secret[0] if isinstance(secret, (list, tuple)) else secret
    events = [json.loads(json.dumps(e.to_dict(), default=str)) for e in flow.stripe.v1.events.list(
        params={"limit": 100}).auto_paging_iter() if e.type.startswith("subscription_schedule.")]
    assert len(events) >= 6
    with flow.app.app_context():  # the row and the ledger forget: the replayed events alone must tell it again
        db.session.execute(db.update(Subscription).values(scheduled_change=None))
        db.session.execute(db.delete(Notification).where(Notification.kind.startswith("plan_change_")))
        db.session.execute(db.delete(WebhookEvent))
        db.session.commit()
    replay = events + random.Random(45).sample(events, len(events) // 2)
    random.Random(7).shuffle(replay)
    for event in replay:
        assert deliver(flow.client, event, secret=secret).status_code == 200
    assert stored_change(flow, subscription_id) == expected
    assert kinds(flow) == notified



def test_an_organization_schedules_and_its_seats_follow_into_the_next_phase(flow):
    team = Team(flow)
    team.join("bob")
    subscription_id = team.subscribe()
    answer = swap_later(flow, "pro", path=f"{team.base}/subscription/swap")
    assert (answer["scheduled_change"]["plan"], answer["scheduled_change"]["quantity"]) == ("pro", 2)
    for method in ("post", "delete"):  # a member's token neither schedules nor withdraws the organisation's change
        path = f"{team.base}/subscription/swap" if method == "post" else f"{team.base}/subscription/scheduled-change"
        refused = getattr(flow.client, method)(path, json={"price": flow.prices["basic"], "at": "period_end"},
                                               headers=team.headers["bob"])
        assert refused.status_code == 403, refused.json
    bob = flow.client.get("/auth/me", headers=team.headers["bob"]).json["id"]
    assert flow.client.delete(f"{team.base}/members/{bob}", headers=team.headers["bob"]).status_code == 204
    assert team.stripe_quantity(subscription_id) == 1
    with flow.app.app_context():  # what app.organizations.seats.change_seats calls once the lead wires it in
        row = db.session.scalars(db.select(Subscription).where(Subscription.provider_id == subscription_id)).one()
        assert schedules.follow_seats(db.session.get(Organization, team.org), row, 1) is not None
        db.session.commit()
    assert [p["items"][0]["quantity"] for p in live_schedule(flow, subscription_id).phases] == [1, 1]
    shown = flow.client.get(f"{team.base}/subscription", headers=team.ada).json["subscription"]
    assert shown["scheduled_change"]["quantity"] == 1
    to_period_end(flow, subscription_id)
    renewal = invoices(flow, subscription_id)[0]  # its period line; the leave's credit is on it too
    lines = [(line.amount, line.quantity) for line in renewal.lines.data]
    assert (2900, 1) in lines and (5800, 2) not in lines, "one seat at the new price, not the seat that left"
    assert flow.client.get(f"{team.base}/subscription", headers=team.ada).json["plan"] == "pro"


def test_sync_writes_the_scheduled_change_a_lost_webhook_did_not(flow):
    subscription_id = subscribe(flow, "pro")
    swap_later(flow, "basic")
    with flow.app.app_context():  # the change's answer and its webhooks lost
        db.session.execute(db.update(Subscription).values(scheduled_change=None))
        db.session.commit()
    assert state(flow)["subscription"]["scheduled_change"] is None
    result = flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"])
    assert result.exit_code == 0, result.output
    assert "scheduled_change" in result.output
    assert state(flow)["subscription"]["scheduled_change"]["price"] == flow.prices["basic"]
    flow.stripe.v1.subscription_schedules.release(live_schedule(flow, subscription_id).id)
    assert flow.app.test_cli_runner().invoke(args=["sync-user", "ada@example.com"]).exit_code == 0
    assert stored_change(flow, subscription_id) is None


def test_a_period_end_swap_to_the_current_price_withdraws_the_change(flow):
    subscription_id = subscribe(flow, "pro")
    swap_later(flow, "basic")
    answer = swap_later(flow, "pro")
    assert (answer["scheduled_change"], answer["subscription"]["price"]) == (None, flow.prices["pro"])
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).schedule is None
