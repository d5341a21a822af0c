"""Managing a subscription from the app (issue 20): swap with preview, cancel, resume, seats.

Everything goes through the real stripe SDK to the emulator and back by real HTTP webhooks. The
rule under test is provider-first: the local row changes only from what Stripe says, so a declined
swap leaves the price and the plan as they were, in the database and at Stripe.
"""
import threading
import uuid
from datetime import timedelta

import requests

from app.extensions import db
from app.models import IdempotencyKey
from app.timeutil import utcnow
from tests.support.billing import (
    DAY,
    UPDATES,
    post,
    prices,  # noqa: F401 (a fixture)
    stored,
    subscribe,
    updates,
    use_card,
)


def test_preview_then_swap_charges_what_the_preview_showed(flow):
    subscription_id = subscribe(flow)
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}",
                              headers=flow.headers)
    assert preview.status_code == 200, preview.json
    shown = preview.json
    assert shown["currency"] == "usd" and 0 < shown["amount_due"] <= 2000
    assert [line["amount"] < 0 for line in shown["lines"]] == [True, False], "a credit, then the new price"
    assert all(line["period_start"] == shown["proration_date"] for line in shown["lines"])

    answer = post(flow, "/subscription/swap", {"price": flow.prices["pro"],
                                               "proration_date": shown["proration_date"]}).json
    assert answer["pending_update"] is None
    assert answer["subscription"]["price"] == flow.prices["pro"] and answer["subscription"]["plan"] == "pro"
    assert flow.me()["plan"] == "pro", "Stripe's answer is written at once"
    invoice = flow.stripe.v1.invoices.retrieve(flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice)
    assert invoice.billing_reason == "subscription_update"
    assert invoice.amount_paid == shown["amount_due"], "the swap charged exactly what the preview showed"

    flow.deliver()
    assert flow.notifications().count("plan_changed") == 1
    assert stored(flow, subscription_id)[0] == flow.prices["pro"]


def test_a_declined_swap_keeps_price_and_plan_until_a_good_payment_applies_it(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")

    refused = post(flow, "/subscription/swap", {"price": flow.prices["pro"]},
                   expect=402).json["error"]
    assert refused["code"] == "payment_required"
    assert refused["details"]["client_secret"] and refused["details"]["hosted_invoice_url"].startswith("http")
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live["items"].data[0].price.id == flow.prices["basic"], "Stripe kept the old price"
    assert live.pending_update.subscription_items[0].price.id == flow.prices["pro"]
    assert stored(flow, subscription_id)[0] == flow.prices["basic"]
    flow.deliver()
    assert flow.me()["plan"] == "basic" and stored(flow, subscription_id)[0] == flow.prices["basic"]
    assert flow.notifications()[0] == "swap_payment_failed" and "plan_changed" not in flow.notifications()

    paid_with = flow.pay(refused["details"]["client_secret"], "pm_card_visa").payment_method
    assert "customer.subscription.pending_update_applied" in flow.deliver()
    assert flow.me()["plan"] == "pro" and stored(flow, subscription_id)[0] == flow.prices["pro"]
    assert flow.notifications().count("plan_changed") == 1
    flow.deliver()
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).default_payment_method == paid_with, \
        "the card that paid is promoted: the declining one would fail the next renewal"


def test_a_swap_that_needs_authentication_answers_402_with_the_invoice_to_confirm(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_authenticationRequired")
    refused = post(flow, "/subscription/swap", {"price": flow.prices["team"]},
                   expect=402).json["error"]
    payment_intent = flow.stripe.v1.payment_intents.retrieve(refused["details"]["client_secret"].split("_secret_")[0])
    assert payment_intent.status == "requires_action"
    assert flow.me()["plan"] == "basic"


def test_a_declined_upgrade_stays_declined_through_any_retry(flow):
    """Issue 25 item 2: while the declined change waits, no price or seat change gets through."""
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    refused = post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, expect=402).json["error"]
    assert refused["details"]["amount_due"] > 0 and refused["details"]["currency"] == "usd"
    shown = flow.client.get("/subscription", headers=flow.headers).json["subscription"]["pending_update"]
    assert shown["price"] == flow.prices["pro"] and shown["quantity"] == 1 and shown["expires_at"] > 0
    before = updates(flow)
    for path, body in (("/subscription/swap", {"price": flow.prices["pro"]}),
                       ("/subscription/swap", {"price": flow.prices["team"]}),
                       ("/subscription/swap", {"price": flow.prices["basic"]}),
                       ("/subscription/quantity", {"quantity": 2}),
                       ("/subscription/quantity", {"quantity": 1})):
        pending = post(flow, path, body, expect=409).json["error"]
        assert pending["code"] == "payment_pending", (path, body)
        assert pending["details"] == {key: refused["details"][key]
                                      for key in ("invoice", "hosted_invoice_url", "amount_due", "currency")}
    for smuggled in ({"proration": "create_prorations"}, {"proration": "none"}):
        error = post(flow, "/subscription/swap", {"price": flow.prices["pro"], **smuggled}, expect=422).json["error"]
        assert error["code"] == "validation_error" and "proration" in error["details"]
    assert updates(flow) == before, "nothing reached Stripe"
    assert flow.me()["plan"] == "basic" and stored(flow, subscription_id)[:2] == (flow.prices["basic"], 1)
    assert post(flow, "/subscription/cancel").json["subscription"]["cancel_at_period_end"] is True


def test_an_unpaid_pending_update_expires_and_the_old_price_stays(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, expect=402)
    flow.deliver()
    flow.emulator.advance(DAY)
    assert "customer.subscription.pending_update_expired" in flow.deliver()
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).pending_update is None
    assert flow.me()["plan"] == "basic"
    failures = [n for n in flow.client.get("/notifications", headers=flow.headers).json["data"]
                if n["kind"] == "swap_payment_failed"]
    assert [n["data"]["reason"] for n in failures] == ["expired", "payment_failed"]


def test_a_cheaper_price_applies_at_once_and_its_credit_waits_for_the_renewal(flow):
    subscription_id = subscribe(flow, plan="team")
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    charged = flow.stripe.v1.invoices.list(params={"customer": customer}).data
    answer = post(flow, "/subscription/swap", {"price": flow.prices["basic"]}).json
    assert answer["subscription"]["plan"] == "basic" and answer["pending_update"] is None
    assert len(flow.stripe.v1.invoices.list(params={"customer": customer}).data) == len(charged), \
        "nothing is invoiced now"
    upcoming = flow.stripe.v1.invoices.create_preview(params={"subscription": subscription_id})
    amounts = [line.amount for line in upcoming.lines.data]
    assert amounts[-1] == 900 and amounts[0] < 0, "the credit for the unused time waits for the renewal"
    assert sum(amounts) == upcoming.total < 900


def test_a_dearer_price_is_charged_at_once(flow):
    subscription_id = subscribe(flow)
    answer = post(flow, "/subscription/swap", {"price": flow.prices["team"]}).json
    assert answer["subscription"]["plan"] == "team" and answer["pending_update"] is None
    invoice = flow.stripe.v1.invoices.retrieve(flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice)
    assert invoice.billing_reason == "subscription_update" and invoice.status == "paid" and invoice.amount_paid > 0


def test_swapping_to_the_current_price_changes_nothing_at_stripe(flow):
    subscription_id = subscribe(flow)
    before = updates(flow)
    answer = post(flow, "/subscription/swap", {"price": flow.prices["basic"]}).json
    assert answer["subscription"]["price"] == flow.prices["basic"] and answer["pending_update"] is None
    assert updates(flow) == before
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].price.id == flow.prices["basic"]


def test_swap_errors_are_json_with_the_contract_codes(flow):
    assert post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, expect=409).json["error"]["code"] == \
        "not_subscribed"
    assert post(flow, "/subscription/quantity", {"quantity": 2}, expect=409).json["error"]["code"] == "not_subscribed"
    assert post(flow, "/subscription/cancel", expect=409).json["error"]["code"] == "not_subscribed"
    assert post(flow, "/subscription/resume", expect=409).json["error"]["code"] == "not_subscribed"
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}", headers=flow.headers)
    assert preview.status_code == 409 and preview.json["error"]["code"] == "not_subscribed"
    subscribe(flow)
    assert post(flow, "/subscription/swap", {"price": "price_unknown"}, expect=422).json["error"]["code"] == \
        "unknown_price"
    for body in ({"price": flow.prices["pro"], "proration": "always_invoice"}, {"quantity": 2, "proration": "none"}):
        path = "/subscription/quantity" if "quantity" in body else "/subscription/swap"
        invalid = post(flow, path, body, expect=422).json["error"]
        assert invalid["code"] == "validation_error" and "proration" in invalid["details"], "the client never chooses"
    preview = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}&proration=none",
                              headers=flow.headers)
    assert preview.status_code == 422 and "proration" in preview.json["error"]["details"]
    for quantity in (0, -1, "2", 1.5):
        assert post(flow, "/subscription/quantity", {"quantity": quantity}, expect=422).json["error"]["code"] == \
            "validation_error"


def test_a_subscription_in_dunning_is_not_swapped_until_the_payment_is_fixed(flow):
    subscription_id = subscribe(flow)
    flow.emulator.fail_next_renewal(subscription_id)
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    refused = post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, expect=409).json["error"]
    assert refused["code"] == "subscription_past_due" and "payment" in refused["message"]
    assert refused["details"] == {"status": "past_due"}
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].price.id == flow.prices["basic"]


def test_cancel_at_period_end_then_resume(flow):
    subscription_id = subscribe(flow)
    cancelled = post(flow, "/subscription/cancel", {"at_period_end": True}).json["subscription"]
    assert cancelled["cancel_at_period_end"] is True and cancelled["on_grace_period"] is True
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).cancel_at_period_end is True
    before = updates(flow)
    again = post(flow, "/subscription/cancel").json["subscription"]
    assert again == cancelled and updates(flow) == before, "a scheduled cancellation is not scheduled twice"
    resumed = post(flow, "/subscription/resume").json["subscription"]
    assert resumed["cancel_at_period_end"] is False and resumed["ends_at"] is None
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).cancel_at_period_end is False
    flow.deliver()
    assert flow.notifications() == ["cancellation_withdrawn", "cancellation_scheduled", "subscribed"]
    assert flow.me()["plan"] == "basic"


def test_cancel_now_ends_the_subscription_and_the_plan(flow):
    subscription_id = subscribe(flow)
    ended = post(flow, "/subscription/cancel", {"at_period_end": False}).json["subscription"]
    assert ended["status"] == "canceled" and flow.me()["plan"] == "free"
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).status == "canceled"
    flow.deliver()
    assert flow.notifications() == ["subscription_ended", "subscribed"]


def test_resume_after_the_period_ended_is_409_subscription_ended(flow):
    subscribe(flow)
    post(flow, "/subscription/cancel")
    flow.deliver()
    flow.emulator.advance(32 * DAY)
    flow.deliver()
    refused = post(flow, "/subscription/resume", expect=409).json["error"]
    assert refused["code"] == "subscription_ended" and "/subscription/intent" in refused["message"]


def test_seats_change_at_stripe_and_are_shown_as_quantity(flow):
    subscription_id = subscribe(flow)
    answer = post(flow, "/subscription/quantity", {"quantity": 3}).json["subscription"]
    assert answer["quantity"] == 3 and flow.me()["subscription"]["quantity"] == 3
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].quantity == 3
    flow.deliver()
    kinds = flow.client.get("/notifications", headers=flow.headers).json["data"]
    assert [(n["kind"], n["data"].get("from"), n["data"].get("to")) for n in kinds][0] == ("quantity_changed", 1, 3)
    assert stored(flow, subscription_id)[1] == 3


def test_a_retried_post_with_its_idempotency_key_gets_the_first_answer_and_calls_stripe_once(flow):
    subscribe(flow)
    key = str(uuid.uuid4())
    first = post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, key=key)
    calls = flow.emulator.control("GET", "requests")["total"]
    again = post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, key=key)
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert flow.emulator.control("GET", "requests")["total"] == calls, "the retry made no provider call"
    reused = post(flow, "/subscription/swap", {"price": flow.prices["team"]}, key=key, expect=422)
    assert reused.json["error"]["code"] == "idempotency_key_reused"
    assert flow.me()["plan"] == "pro"


def test_new_keys_with_a_body_sent_before_are_new_changes_at_stripe(flow):
    subscription_id = subscribe(flow)
    before = updates(flow)
    for key, plan in (("a", "pro"), ("b", "basic"), ("c", "pro")):
        answer = post(flow, "/subscription/swap", {"price": flow.prices[plan]}, key=key)
        assert answer.json["subscription"]["plan"] == plan
    assert updates(flow) - before == 3
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].price.id == flow.prices["pro"]


def test_a_retry_stripe_replays_writes_the_subscription_as_it_is_now(flow, configure):
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    subscription_id = subscribe(flow)
    post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, key="lost-answer")
    flow.portal(subscription_id, "swap", price=flow.prices["team"])  # Stripe moves on, and says so
    flow.deliver()
    with flow.app.app_context():  # as if the first answer had been lost (a 5xx is not stored)
        db.session.execute(db.delete(IdempotencyKey))
        db.session.commit()
    again = post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, key="lost-answer")
    assert again.json["subscription"]["price"] == flow.prices["team"], "Stripe's state now, not its replay"
    assert stored(flow, subscription_id)[0] == flow.prices["team"]


def test_a_proration_date_stripe_refuses_is_422(flow):
    subscribe(flow)
    refused = post(flow, "/subscription/swap", {"price": flow.prices["pro"], "proration_date": 1},
                   expect=422).json["error"]
    assert refused["code"] == "validation_error" and "proration_date" in refused["details"]
    assert flow.me()["plan"] == "basic"


def test_a_replayed_402_is_the_first_answer(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeDeclined")
    body = {"price": flow.prices["pro"]}
    first = post(flow, "/subscription/swap", body, key="declined-swap", expect=402)
    before = updates(flow)
    again = post(flow, "/subscription/swap", body, key="declined-swap", expect=402)
    assert again.json == first.json and updates(flow) == before


def test_a_key_is_kept_24_hours_then_it_names_a_new_request(flow):
    subscribe(flow)
    post(flow, "/subscription/swap", {"price": flow.prices["pro"]}, key="monthly-upgrade")
    expired = utcnow() - timedelta(hours=24, seconds=1)
    with flow.app.app_context():
        db.session.execute(db.update(IdempotencyKey).values(created_at=expired, id=10**9))
        row = db.session.scalars(db.select(IdempotencyKey)).one()
        # More expired keys than one request prunes, all before this key's own row.
        db.session.add_all([IdempotencyKey(user_id=row.user_id, key=f"old-{n}", request_digest="x", status=200,
                                           body="{}", created_at=expired) for n in range(15)])
        db.session.commit()
    answer = post(flow, "/subscription/swap", {"price": flow.prices["team"]}, key="monthly-upgrade")
    assert "Idempotent-Replayed" not in answer.headers and answer.json["subscription"]["plan"] == "team"
    with flow.app.app_context():
        kept = db.session.scalars(db.select(IdempotencyKey).where(IdempotencyKey.key == "monthly-upgrade")).all()
        assert len(kept) == 1 and kept[0].created_at > utcnow() - timedelta(minutes=1)
        assert db.session.scalar(db.select(db.func.count(IdempotencyKey.id))) == 1 + 15 - 10, "ten pruned"


def test_the_intent_and_the_portal_take_an_idempotency_key(flow):
    first = post(flow, "/subscription/intent", {"price": flow.prices["basic"]}, key="intent-1", expect=201)
    again = post(flow, "/subscription/intent", {"price": flow.prices["basic"]}, key="intent-1", expect=201)
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert flow.emulator.control("GET", "requests")["by_resource"][UPDATES] == 1, "one subscription created"
    portal = post(flow, "/subscription/portal", {}, key='"portal-1"')
    assert post(flow, "/subscription/portal", {}, key='"portal-1"').json == portal.json
    too_long = post(flow, "/subscription/portal", {}, key="k" * 256, expect=400)
    assert too_long.json["error"]["code"] == "invalid_idempotency_key"


def test_ten_concurrent_swaps_make_one_provider_change_per_distinct_key(flow):
    subscription_id = subscribe(flow)
    targets = ["pro", "team", "business", "max", "pro"]
    before = updates(flow)
    answers = {}

    def swap(index):
        key = f"swap-{index % 5}"
        response = requests.post(f"{flow.base_url}/subscription/swap", json={"price": flow.prices[targets[index % 5]]},
                                 headers={**flow.headers, "Idempotency-Key": key}, timeout=30)
        answers.setdefault(key, []).append((response.status_code, response.json()))

    threads = [threading.Thread(target=swap, args=(index,)) for index in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(answers) == [f"swap-{n}" for n in range(5)]
    for pair in answers.values():
        assert [status for status, _ in pair] == [200, 200] and pair[0][1] == pair[1][1]
    changes = updates(flow) - before
    assert changes <= 5, "at most one provider change per distinct key"
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert stored(flow, subscription_id)[0] == live["items"].data[0].price.id
    flow.deliver()
    assert stored(flow, subscription_id)[0] == flow.stripe.v1.subscriptions.retrieve(subscription_id)[
        "items"].data[0].price.id


def test_a_swap_racing_a_webhook_of_the_same_subscription_ends_in_stripes_state(flow, configure):
    configure(PROVIDER_PORTAL_PLAN_CHANGES=True)
    subscription_id = subscribe(flow)
    # A change made elsewhere (the portal) whose webhook is still on its way ...
    flow.portal(subscription_id, "swap", price=flow.prices["team"])
    # ... then a swap through the service, written from Stripe's answer.
    post(flow, "/subscription/swap", {"price": flow.prices["max"]})
    flow.deliver()
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live["items"].data[0].price.id == flow.prices["max"]
    assert stored(flow, subscription_id)[0] == flow.prices["max"] and flow.me()["plan"] == "max"

    # And with the webhooks delivered by the emulator's worker while swaps go through.
    flow.emulator.resume_delivery()
    for plan in ("pro", "team", "business", "basic"):
        post(flow, "/subscription/swap", {"price": flow.prices[plan]})
    flow.emulator.pause_delivery()
    flow.deliver()
    assert stored(flow, subscription_id)[0] == flow.prices["basic"] == \
        flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].price.id
