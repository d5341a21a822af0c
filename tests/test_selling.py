"""Selling (issue 28): receipts, the plan catalogue, promotion codes, Checkout and tax.

Everything goes through the real stripe SDK to the emulator and back by real HTTP webhooks; mail
goes to a real SMTP server.
"""
import json
import time

import pytest
import requests
import time_machine
from sqlalchemy import select

from app.billing.events import REQUIRED_EVENT_TYPES
from app.extensions import db
from app.models import Notification, User
from tests.support.billing import (
    prices,  # noqa: F401 (a fixture: the five monthly prices, basic 9.00 to max 99.00 USD)
    subscribe,
    use_card,
)
from tests.support.events import deliver, load_event
from tests.support.notifications import mail_config, work
from tests.support.selling import checkout, complete, promotion, resend


@pytest.fixture
def live_config(smtp_server):
    return mail_config(smtp_server)


def notes(flow, kind=None):
    data = flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]
    return [(n["kind"], n["data"]) for n in data if kind is None or n["kind"] == kind]


def paid_events(flow):
    return [json.loads(str(event)) for event in flow.stripe.v1.events.list(params={"type": "invoice.paid"}).data]


def test_a_paid_invoice_sends_one_receipt_with_its_links_by_email(flow, smtp_server):
    subscription_id = subscribe(flow)
    (receipt,) = [data for kind, data in notes(flow) if kind == "payment_succeeded"]
    (invoice,) = flow.stripe.v1.invoices.list(params={"subscription": subscription_id}).data
    assert receipt == {"invoice": invoice.id, "amount_paid": 900, "currency": "usd",
                       "hosted_invoice_url": invoice.hosted_invoice_url, "invoice_pdf": invoice.invoice_pdf}

    assert work(flow.app, "--once").exit_code == 0
    (mail,) = [m for m in smtp_server.messages if m["Subject"].startswith("Your receipt")]
    assert mail["Subject"] == "Your receipt: 9.00 USD"
    text, html = mail.get_body(("plain",)).get_content(), mail.get_body(("html",)).get_content()
    assert invoice.hosted_invoice_url in text and invoice.invoice_pdf in text
    assert f'href="{invoice.invoice_pdf}"' in html


def test_a_receipt_is_sent_once_per_invoice_however_often_it_is_delivered(flow):
    flow.emulator.duplicate(20)
    subscribe(flow)
    (event,) = paid_events(flow)
    assert resend(flow, event).status_code == 200, "a redelivery: the ledger"
    assert resend(flow, {**event, "id": event["id"] + "x"}).status_code == 200, "another event, same invoice"
    assert len(notes(flow, "payment_succeeded")) == 1


def test_an_invoice_that_took_no_money_sends_no_receipt(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=14)
    flow.intent()
    assert "invoice.paid" in flow.deliver()
    assert [kind for kind, _ in notes(flow)] == [], \
        "the trial's zero invoice is paid, for nothing; the trial starts once its card is saved"


def catalogue(flow, **headers):
    return flow.client.get("/plans", headers=headers)


def test_the_catalogue_is_read_from_stripe_once_and_cached(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=7)
    first = catalogue(flow)
    assert first.status_code == 200 and first.headers["Cache-Control"] == "public, no-cache"
    plans = first.json["data"]
    assert [plan["plan"] for plan in plans] == ["basic", "pro", "team", "business", "max"], "PROVIDER_PLANS' order"
    product = flow.stripe.v1.prices.retrieve(flow.prices["basic"]).product
    assert plans[0] == {"plan": "basic", "price": flow.prices["basic"], "product": product, "name": "Service",
                        "description": None, "unit_amount": 900, "currency": "usd", "interval": "month",
                        "interval_count": 1, "trial_days": 7}
    before = requests_to(flow, "GET /v1/prices")
    for _ in range(5):
        assert catalogue(flow).json == first.json
    assert requests_to(flow, "GET /v1/prices") == before, "served from the process's copy"
    not_modified = catalogue(flow, **{"If-None-Match": first.headers["ETag"]})
    assert not_modified.status_code == 304 and not_modified.data == b""
    # RFC 9110 13.1.2: If-None-Match compares weakly, so a cache's weakened W/ tag matches too.
    weak = catalogue(flow, **{"If-None-Match": f'"other", W/{first.headers["ETag"]}'})
    assert weak.status_code == 304 and weak.headers["ETag"] == first.headers["ETag"]
    assert catalogue(flow, **{"If-None-Match": 'W/"other"'}).status_code == 200


def requests_to(flow, resource):
    return flow.emulator.control("GET", "requests")["by_resource"].get(resource, 0)


def test_a_price_or_product_webhook_refreshes_every_workers_catalogue(flow, make_app):
    other = make_app(PROVIDER_WEBHOOK_SECRET=flow.app.config["PROVIDER_WEBHOOK_SECRET"])  # another worker
    assert len(catalogue(flow).json["data"]) == 5 and len(other.test_client().get("/plans").json["data"]) == 5
    flow.stripe.v1.prices.update(flow.prices["max"], params={"active": False})
    product = flow.stripe.v1.prices.retrieve(flow.prices["basic"]).product
    flow.stripe.v1.products.update(product, params={"description": "Everything you need"})
    assert flow.deliver() == ["price.updated", "product.updated"]
    for client in (flow.client, other.test_client()):
        plans = client.get("/plans").json["data"]
        assert [plan["plan"] for plan in plans] == ["basic", "pro", "team", "business"], "an archived price"
        assert {plan["description"] for plan in plans} == {"Everything you need"}


def test_the_catalogue_is_read_again_after_its_ttl(flow, configure):
    configure(PROVIDER_CATALOG_TTL=0)
    before = requests_to(flow, "GET /v1/prices")
    catalogue(flow)
    catalogue(flow)
    assert requests_to(flow, "GET /v1/prices") == before + 2


def test_the_catalogue_is_503_when_stripe_cannot_be_read(flow):
    flow.emulator.add_fault("/v1/prices", status=500, count=1)
    refused = catalogue(flow)
    assert refused.status_code == 503 and refused.json["error"]["code"] == "provider_unavailable"


def test_a_paid_one_off_invoice_sends_a_receipt_and_its_legacy_twin_none(app, client):
    with app.app_context():
        db.session.add(User(email="pay@example.com", password_hash="x", provider_id="cus_00000000000000"))
        db.session.commit()
    for name in ("17", "18", "17"):  # invoice.paid, its twin invoice.payment_succeeded, a redelivery
        assert deliver(client, load_event(name)).status_code == 200
    with app.app_context():
        receipts = db.session.scalars(select(Notification)).all()
    assert [(n.kind, n.data["amount_paid"], n.data["currency"]) for n in receipts] == [
        ("payment_succeeded", 2000, "usd")]


def changes_at_stripe(flow):
    """The API requests that change something at Stripe, by resource (``GET /_emulator/requests``)."""
    counts = flow.emulator.control("GET", "requests")["by_resource"]
    return {resource: n for resource, n in counts.items() if not resource.startswith("GET ")}


def test_a_refused_promotion_code_changes_nothing_at_stripe(flow):
    inactive = promotion(flow, "OLD10")
    flow.stripe.v1.promotion_codes.update(inactive.id, params={"active": False})
    before = changes_at_stripe(flow)
    for code in ("NOPE", "OLD10"):
        refused = flow.client.post("/subscription/intent", json={"price": flow.prices["basic"], "promotion_code": code},
                                   headers=flow.headers)
        assert refused.status_code == 422 and refused.json["error"]["code"] == "invalid_promotion_code", code
        assert refused.json["error"]["details"] == {"promotion_code": code}
    assert changes_at_stripe(flow) == before, "refused before the customer or subscription is created"

    subscribe(flow)
    before = changes_at_stripe(flow)
    refused = flow.client.post("/subscription/swap", json={"price": flow.prices["pro"], "promotion_code": "NOPE"},
                               headers=flow.headers)
    assert refused.status_code == 422 and refused.json["error"]["code"] == "invalid_promotion_code"
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}&promotion_code=OLD10",
                            headers=flow.headers)
    assert shown.status_code == 422 and shown.json["error"]["code"] == "invalid_promotion_code"
    assert changes_at_stripe(flow) == before


def test_an_intent_with_a_promotion_code_is_discounted_as_stripe_has_it(flow):
    code = promotion(flow)
    body = {"price": flow.prices["basic"], "promotion_code": "launch20"}  # as typed: Stripe ignores the case
    started = flow.client.post("/subscription/intent", json=body, headers=flow.headers)
    assert started.status_code == 201, started.json
    assert started.json["subscription"]["discount"] == {
        "coupon": {"id": code.promotion.coupon, "percent_off": 20.0, "amount_off": None, "currency": None,
                   "duration": "forever", "duration_in_months": None},
        "promotion_code": code.id, "end": None}
    flow.pay(started.json["client_secret"])
    flow.deliver()
    (invoice,) = flow.client.get("/subscription/invoices", headers=flow.headers).json["data"]
    assert (invoice["amount_paid"], invoice["status"]) == (720, "paid")
    assert flow.me()["subscription"]["discount"]["promotion_code"] == code.id, "webhooks keep it"
    assert [data["amount_paid"] for _, data in notes(flow, "payment_succeeded")] == [720]


def test_a_swap_preview_with_a_code_shows_the_discounted_charge_and_the_swap_charges_it(flow):
    subscribe(flow)
    promotion(flow, "HALF", percent_off=50, duration="forever")
    plain = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}", headers=flow.headers).json
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}&promotion_code=HALF",
                            headers=flow.headers).json
    assert 0 < shown["amount_due"] < plain["amount_due"]
    swapped = flow.client.post("/subscription/swap", json={
        "price": flow.prices["pro"], "promotion_code": "HALF", "proration_date": shown["proration_date"]},
        headers=flow.headers)
    assert swapped.status_code == 200, swapped.json
    assert swapped.json["subscription"]["price"] == flow.prices["pro"]
    assert swapped.json["subscription"]["discount"]["coupon"]["percent_off"] == 50.0
    charged = flow.client.get("/subscription/invoices", headers=flow.headers).json["data"][0]
    assert (charged["amount_paid"], charged["status"]) == (shown["amount_due"], "paid")


def test_a_declined_swap_with_a_code_changes_nothing(flow):
    subscription_id = subscribe(flow)
    promotion(flow, "HALF", percent_off=50, duration="forever")
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    refused = flow.client.post("/subscription/swap", json={"price": flow.prices["pro"], "promotion_code": "HALF"},
                               headers=flow.headers)
    assert refused.status_code == 402 and refused.json["error"]["code"] == "payment_required"
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    assert live["items"].data[0].price.id == flow.prices["basic"]
    assert live.discounts == [], "no discount on the old price"


def events_since(flow, count):
    """The events Stripe sent an endpoint for since ``count`` events existed, oldest first, as dicts."""
    page = flow.stripe.v1.events.list(params={"limit": 100}).data
    wanted = set(REQUIRED_EVENT_TYPES)
    return [json.loads(str(e)) for e in reversed(page[:len(page) - count]) if e.type in wanted]


ORDERS = {
    "completed_first": lambda events, done: [done, *events],
    "completed_last": lambda events, done: [*events, done],
    "completed_between": lambda events, done: [events[0], done, *events[1:]],
    "completed_twice": lambda events, done: [done, *events, done, {**done, "id": done["id"] + "_again"}],
}


@pytest.mark.parametrize("order", sorted(ORDERS))
def test_a_checkout_subscription_ends_active_with_one_subscribed_and_one_receipt_in_any_order(flow, order):
    session = checkout(flow)
    assert session["id"].startswith("cs_") and requests.get(session["url"], timeout=10).status_code == 200
    flow.deliver()
    before = len(flow.stripe.v1.events.list(params={"limit": 100}).data)
    completed = complete(flow, session["id"])
    events = events_since(flow, before)
    (done,) = [event for event in events if event["type"] == "checkout.session.completed"]
    for event in ORDERS[order]([event for event in events if event is not done], done):
        assert resend(flow, event).status_code == 200, event["type"]
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["id"] == completed["subscription"]
    assert me["subscription"]["status"] == "active" and me["card"] == {"brand": "visa", "last4": "4242"}
    kinds = [kind for kind, _ in notes(flow)]
    assert sorted(kinds) == ["payment_succeeded", "subscribed"], kinds


def test_checkout_urls_must_be_on_the_allowed_hosts(flow, configure):
    before = changes_at_stripe(flow)
    for field in ("success_url", "cancel_url"):
        refused = checkout(flow, expect=422, **{field: "https://evil.example/phish"})["error"]
        assert refused["code"] == "validation_error" and list(refused["details"]) == [field]
    assert changes_at_stripe(flow) == before
    configure(CHECKOUT_ALLOWED_HOSTS=frozenset({"shop.example"}))
    checkout(flow, success_url="https://shop.example/ok", cancel_url="https://SHOP.example/back")


def test_a_checkout_with_a_promotion_code_is_discounted_and_a_second_one_refused(flow):
    promotion(flow)
    assert checkout(flow, expect=422, promotion_code="NOPE")["error"]["code"] == "invalid_promotion_code"
    session = checkout(flow, promotion_code="LAUNCH20", quantity=2)
    completed = complete(flow, session["id"])
    assert (completed["amount_subtotal"], completed["amount_total"]) == (1800, 1440)
    flow.deliver()
    assert flow.me()["subscription"]["discount"]["coupon"]["percent_off"] == 20.0
    assert flow.me()["subscription"]["quantity"] == 2
    assert checkout(flow, expect=409)["error"]["code"] == "already_subscribed"


DE = {"line1": "Unter den Linden 1", "city": "Berlin", "postal_code": "10117", "country": "DE"}


def test_a_tax_id_type_stripe_does_not_list_is_refused_before_any_call(flow):
    before = flow.emulator.control("GET", "requests")["total"]
    refused = flow.client.post("/subscription/tax-ids", json={"type": "xx_nope", "value": "1"}, headers=flow.headers)
    assert refused.status_code == 422 and refused.json["error"]["code"] == "invalid_tax_id", refused.json
    assert refused.json["error"]["details"] == {"type": "xx_nope"}
    assert flow.emulator.control("GET", "requests")["total"] == before, "no Stripe call, no customer made for it"


def test_billing_details_and_tax_ids_live_on_the_stripe_customer(flow, make_app):
    assert flow.client.get("/subscription/billing-details", headers=flow.headers).json == {
        "name": None, "address": None, "tax_ids": []}
    put = flow.client.put("/subscription/billing-details", json={"name": "ACME GmbH", "address": DE},
                          headers=flow.headers)
    assert put.status_code == 200, put.json
    assert put.json["address"] == {**DE, "line2": None, "state": None} and put.json["name"] == "ACME GmbH"
    added = flow.client.post("/subscription/tax-ids", json={"type": "eu_vat", "value": "DE123456789"},
                             headers=flow.headers)
    assert added.status_code == 201, added.json
    assert {k: added.json[k] for k in ("type", "value", "country")} == {"type": "eu_vat", "value": "DE123456789",
                                                                       "country": "DE"}
    assert added.json["verification"]["status"] == "pending"
    shown = flow.client.get("/subscription/billing-details", headers=flow.headers).json
    assert shown["tax_ids"] == [added.json] and shown["address"]["country"] == "DE"
    for kind, value in (("eu_vat", "DE12"), ("gb_vat", "GB1"), ("us_ein", "123456789"), ("au_abn", "1234"),
                        ("xx_nope", "1")):
        refused = flow.client.post("/subscription/tax-ids", json={"type": kind, "value": value}, headers=flow.headers)
        assert refused.status_code == 422 and refused.json["error"]["code"] == "invalid_tax_id", (kind, refused.json)
    for kind, value in (("gb_vat", "GB123456789"), ("us_ein", "12-3456789"), ("au_abn", "12345678901")):
        assert flow.client.post("/subscription/tax-ids", json={"type": kind, "value": value},
                                headers=flow.headers).status_code == 201, kind

    # Another user's tax id is not theirs to delete.
    other = flow.stripe.v1.customers.create(params={"email": "x@example.com"})
    foreign = flow.stripe.v1.customers.tax_ids.create(other.id, params={"type": "us_ein", "value": "12-3456789"})
    gone = flow.client.delete(f"/subscription/tax-ids/{foreign.id}", headers=flow.headers)
    assert gone.status_code == 404 and gone.json["error"]["code"] == "not_found"
    assert flow.client.delete(f"/subscription/tax-ids/{added.json['id']}", headers=flow.headers).status_code == 204
    assert added.json["id"] not in [t["id"] for t in flow.client.get(
        "/subscription/billing-details", headers=flow.headers).json["tax_ids"]]


def test_with_automatic_tax_every_invoice_and_preview_is_taxed_and_adds_up(flow, configure):
    configure(PROVIDER_AUTOMATIC_TAX=True)
    flow.client.put("/subscription/billing-details", json={"address": DE}, headers=flow.headers)
    subscription_id = subscribe(flow)
    shown = flow.client.get(f"/subscription/swap/preview?price={flow.prices['pro']}", headers=flow.headers).json
    assert shown["tax"] > 0 and shown["total"] == shown["subtotal"] + shown["tax"]
    swap = {"price": flow.prices["pro"], "proration_date": shown["proration_date"]}
    assert flow.client.post("/subscription/swap", json=swap, headers=flow.headers).status_code == 200
    upcoming = flow.client.get("/subscription/invoices/upcoming", headers=flow.headers).json
    invoices = flow.client.get("/subscription/invoices", headers=flow.headers).json["data"]
    assert [(i["subtotal"], i["tax"]) for i in invoices][-1] == (900, 171), "19 % on the first invoice (DE)"
    for invoice in [*invoices, upcoming]:
        assert invoice["total"] == invoice["subtotal"] + invoice["tax"], invoice
    assert upcoming["tax"] == round(2900 * 0.19)
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).automatic_tax.enabled is True


def test_a_first_checkout_subscription_is_a_trial_announced_once_and_entitled_by_its_card(flow, configure):
    configure(PROVIDER_TRIAL_DAYS=14)
    session = checkout(flow)
    complete(flow, session["id"])
    flow.deliver()
    me = flow.me()
    assert me["subscription"]["status"] == "trialing" and me["plan"] == "basic", "Checkout saved the card"
    assert [kind for kind, _ in notes(flow)] == ["trial_started"], "no subscribed, no receipt for nothing"


def test_with_a_discount_and_tax_every_invoice_answer_is_subtotal_plus_tax(flow, configure):
    configure(PROVIDER_AUTOMATIC_TAX=True)
    flow.client.put("/subscription/billing-details", json={"address": DE}, headers=flow.headers)
    promotion(flow)
    body = {"price": flow.prices["basic"], "promotion_code": "LAUNCH20"}
    started = flow.client.post("/subscription/intent", json=body, headers=flow.headers).json
    flow.pay(started["client_secret"])
    flow.deliver()
    (paid,) = flow.client.get("/subscription/invoices", headers=flow.headers).json["data"]
    upcoming = flow.client.get("/subscription/invoices/upcoming", headers=flow.headers).json
    assert (paid["subtotal"], paid["tax"], paid["total"], paid["amount_paid"]) == (720, 137, 857, 857)
    assert upcoming["total"] == upcoming["subtotal"] + upcoming["tax"]


def test_an_expired_promotion_code_is_refused(flow):
    made = flow.stripe.v1.coupons.create(params={"percent_off": 10, "duration": "once"})
    flow.stripe.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": made.id}, "code": "GONE",
                                                  "expires_at": int(time.time()) + 1})
    # Two seconds on, for the service (which compares expires_at with its own clock) and for Stripe.
    with time_machine.travel(time.time() + 2):
        refused = checkout(flow, expect=422, promotion_code="GONE")["error"]
    assert refused["code"] == "invalid_promotion_code" and "expired" in refused["message"]
