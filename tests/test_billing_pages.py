"""Billing pages without the portal (issue 21): invoices, the next invoice, the card form.

Through the real stripe SDK to the emulator and back by real HTTP webhooks. Invoices are read
through from Stripe on every request; a saved card becomes what pays only when Stripe's
``setup_intent.succeeded`` says the card was saved, never on the client's word.
"""
import re

import pytest
import stripe

from tests.support.billing import calls, get, post, save_card, settle, subscribe, use_card

INVOICE_FIELDS = {"id", "number", "status", "amount_due", "amount_paid", "currency", "created", "period_start",
                  "period_end", "hosted_invoice_url", "invoice_pdf", "subtotal", "tax", "total"}
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def renew(flow, subscription_id):
    end = flow.stripe.v1.subscriptions.retrieve(subscription_id)["items"].data[0].current_period_end
    flow.emulator.advance(end - flow.emulator.clock() + 1)
    settle(flow)


def charged_with(flow, invoice_id):
    """The payment method the invoice's payment intent charged."""
    invoice = flow.stripe.v1.invoices.retrieve(invoice_id, params={"expand": ["payments"]})
    return flow.stripe.v1.payment_intents.retrieve(invoice.payments.data[0].payment.payment_intent).payment_method


def test_invoices_are_stripes_newest_first_paged_with_its_cursor(flow):
    subscription_id = subscribe(flow)
    for _ in range(4):
        renew(flow, subscription_id)
    customer = flow.stripe.v1.subscriptions.retrieve(subscription_id).customer
    at_stripe = [invoice.id for invoice in flow.stripe.v1.invoices.list(params={"customer": customer}).data]
    assert len(at_stripe) == 5

    pages, cursor, before = [], "", calls(flow, "GET /v1/invoices")
    for _ in range(3):
        page = get(flow, f"/subscription/invoices?limit=2{cursor}")
        pages.append(page)
        cursor = f"&starting_after={page['data'][-1]['id']}"
    assert [len(page["data"]) for page in pages] == [2, 2, 1]
    assert [page["has_more"] for page in pages] == [True, True, False]
    assert [invoice["id"] for page in pages for invoice in page["data"]] == at_stripe
    assert calls(flow, "GET /v1/invoices") == before + 3, "read through from Stripe on every page"

    newest, first = pages[0]["data"][0], pages[2]["data"][0]
    assert set(newest) == INVOICE_FIELDS
    assert (newest["status"], newest["amount_due"], newest["amount_paid"], newest["currency"]) == \
        ("paid", 900, 900, "usd")
    assert all(ISO_Z.match(newest[name]) for name in ("created", "period_start", "period_end"))
    assert newest["number"] and newest["hosted_invoice_url"].startswith(flow.emulator.url)
    assert newest["invoice_pdf"] == newest["hosted_invoice_url"] + "/pdf"
    assert first["id"] == flow.stripe.v1.invoices.retrieve(first["id"]).id and first["amount_paid"] == 900


def test_a_user_without_a_customer_has_no_invoices_and_stripe_is_not_asked(flow):
    before = flow.emulator.control("GET", "requests")["total"]
    assert get(flow, "/subscription/invoices") == {"data": [], "has_more": False}
    assert flow.emulator.control("GET", "requests")["total"] == before


def test_a_cursor_that_is_not_an_invoice_of_the_user_is_a_validation_error(flow):
    subscribe(flow)
    for query in ("starting_after=in_unknown", "starting_after=sub_123", "limit=0", "limit=101"):
        error = get(flow, f"/subscription/invoices?{query}", expect=422)["error"]
        assert error["code"] == "validation_error", query
        assert set(error["details"]) == {query.split("=")[0]}


def test_the_upcoming_invoice_is_the_next_renewal_and_404_once_nothing_renews(flow):
    before = flow.emulator.control("GET", "requests")["total"]
    assert get(flow, "/subscription/invoices/upcoming", expect=404)["error"]["code"] == "not_found"
    assert flow.emulator.control("GET", "requests")["total"] == before, "no subscription: Stripe is not asked"
    subscribe(flow)
    upcoming = get(flow, "/subscription/invoices/upcoming")
    assert set(upcoming) == INVOICE_FIELDS
    assert (upcoming["amount_due"], upcoming["currency"], upcoming["status"], upcoming["number"]) == \
        (900, "usd", "draft", None)
    post(flow, "/subscription/swap", {"price": flow.prices["pro"]})
    assert get(flow, "/subscription/invoices/upcoming")["amount_due"] == 2900, "the next renewal at the new price"

    post(flow, "/subscription/cancel", {"at_period_end": True})
    error = get(flow, "/subscription/invoices/upcoming", expect=404)["error"]
    assert error["code"] == "not_found" and "renews" in error["message"]


def test_a_card_change_moves_the_next_renewal_to_the_new_card(flow):
    subscription_id = subscribe(flow)
    first = flow.stripe.v1.subscriptions.retrieve(subscription_id).default_payment_method
    saved = save_card(flow, "pm_card_mastercard", key="card-1")
    assert saved.status == "succeeded"
    assert flow.me()["card"] == {"brand": "visa", "last4": "4242"}, "nothing changes before Stripe's webhook"
    assert "setup_intent.succeeded" in settle(flow)

    assert flow.me()["card"] == {"brand": "mastercard", "last4": "4444"}
    live = flow.stripe.v1.subscriptions.retrieve(subscription_id)
    customer = flow.stripe.v1.customers.retrieve(live.customer)
    assert live.default_payment_method == customer.invoice_settings.default_payment_method == saved.payment_method
    assert saved.payment_method != first
    renew(flow, subscription_id)
    renewal = flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice
    assert flow.stripe.v1.invoices.retrieve(renewal).billing_reason == "subscription_cycle"
    assert charged_with(flow, renewal) == saved.payment_method
    assert flow.me()["plan"] == "basic" and flow.notifications() == ["subscribed"]


def test_the_card_form_takes_an_idempotency_key_and_creates_the_customer_on_first_use(flow):
    first = post(flow, "/subscription/payment-method", key="form-1", expect=201)
    again = post(flow, "/subscription/payment-method", key="form-1", expect=201)
    assert again.json == first.json and again.headers["Idempotent-Replayed"] == "true"
    assert calls(flow, "POST /v1/setup_intents") == 1 and calls(flow, "POST /v1/customers") == 1
    assert first.headers["Cache-Control"] == "no-store"
    other = post(flow, "/subscription/payment-method", expect=201).json["client_secret"]
    assert other != first.json["client_secret"]
    assert calls(flow, "POST /v1/customers") == 1, "the customer is made once"

    flow.stripe.v1.setup_intents.confirm(other.split("_secret_")[0], params={"payment_method": "pm_card_amex"})
    settle(flow)
    me = flow.me()
    assert me["card"] == {"brand": "amex", "last4": "8431"} and me["plan"] == "free" and me["subscription"] is None


def test_a_declined_card_changes_nothing(flow):
    subscribe(flow)
    with pytest.raises(stripe.CardError):
        save_card(flow, "pm_card_chargeDeclined")
    assert "setup_intent.succeeded" not in settle(flow)
    assert flow.me()["card"] == {"brand": "visa", "last4": "4242"}


def test_a_user_in_dunning_who_adds_a_card_gets_the_open_invoice_paid_and_payment_recovered(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    renew(flow, subscription_id)
    assert flow.me()["subscription"]["status"] == "past_due" and flow.me()["plan"] == "free"
    open_invoice = flow.stripe.v1.subscriptions.retrieve(subscription_id).latest_invoice
    assert flow.notifications()[:2] == ["past_due", "payment_failed"]

    saved = save_card(flow, "pm_card_visa")
    settle(flow)
    assert flow.stripe.v1.invoices.retrieve(open_invoice).status == "paid", "paid now, not at the next retry"
    assert charged_with(flow, open_invoice) == saved.payment_method
    me = flow.me()
    assert me["plan"] == "basic" and me["subscription"]["status"] == "active"
    assert flow.notifications()[0] == "payment_recovered"
    assert flow.notifications().count("payment_recovered") == 1 and flow.notifications().count("payment_failed") == 1


def test_a_card_that_fails_again_leaves_dunning_to_its_retries(flow):
    subscription_id = subscribe(flow)
    use_card(flow, subscription_id, "pm_card_chargeCustomerFail")
    renew(flow, subscription_id)
    save_card(flow, "pm_card_chargeCustomerFail")
    settle(flow)
    assert flow.me()["subscription"]["status"] == "past_due"
    assert flow.notifications()[:3] == ["payment_failed", "past_due", "payment_failed"], "one per failed attempt"


def test_a_card_saved_earlier_whose_event_comes_late_does_not_replace_the_newer_card(flow):
    subscription_id = subscribe(flow)
    older = post(flow, "/subscription/payment-method", expect=201).json["client_secret"].split("_secret_")[0]
    newer = post(flow, "/subscription/payment-method", expect=201).json["client_secret"].split("_secret_")[0]
    settle(flow)
    flow.emulator.reorder(2)  # the two setup_intent.succeeded events arrive newest first
    flow.stripe.v1.setup_intents.confirm(older, params={"payment_method": "pm_card_mastercard"})
    flow.emulator.advance(60)
    latest = flow.stripe.v1.setup_intents.confirm(newer, params={"payment_method": "pm_card_amex"})
    settle(flow)
    assert flow.me()["card"] == {"brand": "amex", "last4": "8431"}
    assert flow.stripe.v1.subscriptions.retrieve(subscription_id).default_payment_method == latest.payment_method


def test_billing_page_errors_are_json_with_the_contract_codes(flow):
    unauthenticated = flow.client.get("/subscription/invoices")
    assert unauthenticated.status_code == 401 and unauthenticated.json["error"]["code"] == "unauthenticated"
    token = flow.client.post("/auth/tokens", headers=flow.headers, json={
        "name": "reader", "abilities": ["subscription:read"]}).json["access_token"]
    reader = {"Authorization": f"Bearer {token}"}
    assert flow.client.get("/subscription/invoices", headers=reader).status_code == 200
    refused = flow.client.post("/subscription/payment-method", headers=reader)
    assert refused.status_code == 403 and refused.json["error"]["code"] == "insufficient_scope"
    flow.emulator.add_fault("/v1/setup_intents", status=500)
    unavailable = flow.client.post("/subscription/payment-method", headers=flow.headers)
    assert unavailable.status_code == 503 and unavailable.json["error"]["code"] == "provider_unavailable"
    wrong = flow.client.delete("/subscription/invoices", headers=flow.headers)
    assert wrong.status_code == 405 and wrong.json["error"]["code"] == "method_not_allowed"
