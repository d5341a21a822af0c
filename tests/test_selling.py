"""Selling (issue 28): receipts, the plan catalogue, promotion codes, Checkout and tax.

Everything goes through the real stripe SDK to the emulator and back by real HTTP webhooks; mail
goes to a real SMTP server.
"""
import json

import pytest

from tests import test_subscription_management
from tests.signing import sign
from tests.test_billing_flow import start_flow
from tests.test_notification_delivery import mail_config, work
from tests.test_subscription_management import subscribe

prices = test_subscription_management.prices  # the five monthly prices, basic 9.00 to max 99.00 USD


@pytest.fixture
def flow(live, emulator, stripe_client, prices):
    return start_flow(live, emulator, stripe_client, prices)


@pytest.fixture
def live_config(smtp_server):
    return mail_config(smtp_server)


def notes(flow, kind=None):
    data = flow.client.get("/notifications?limit=100", headers=flow.headers).json["data"]
    return [(n["kind"], n["data"]) for n in data if kind is None or n["kind"] == kind]


def resend(flow, event):
    """Deliver ``event`` (a dict) to the live service again, signed with its endpoint's secret."""
    payload = json.dumps(event).encode()
    secret = flow.app.config["PROVIDER_WEBHOOK_SECRET"][0]
    return flow.client.post("/provider/webhook", data=payload, content_type="application/json",
                            headers={"Stripe-Signature": sign(payload, secret=secret)})


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


def test_an_invoice_that_took_no_money_sends_no_receipt(flow):
    flow.app.config["PROVIDER_TRIAL_DAYS"] = 14
    flow.intent()
    assert "invoice.paid" in flow.deliver()
    assert [kind for kind, _ in notes(flow)] == ["trial_started"], "the trial's zero invoice is paid, for nothing"
