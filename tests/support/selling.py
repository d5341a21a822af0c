"""Stripe Checkout and promotion codes as the client app and the customer use them."""
import json

import requests

from tests.signing import sign


def resend(flow, event):
    """Deliver ``event`` (a dict) to the live service again, signed with its endpoint's secret."""
    payload = json.dumps(event).encode()
    secret = flow.app.config["PROVIDER_WEBHOOK_SECRET"][0]
    return flow.client.post("/provider/webhook", data=payload, content_type="application/json",
                            headers={"Stripe-Signature": sign(payload, secret=secret)})


def promotion(flow, code="LAUNCH20", **coupon):
    """A coupon (20 % off forever unless given) and an active promotion code ``code`` pointing at it."""
    made = flow.stripe.v1.coupons.create(params=coupon or {"percent_off": 20, "duration": "forever"})
    return flow.stripe.v1.promotion_codes.create(params={"promotion": {"type": "coupon", "coupon": made.id},
                                                         "code": code})


URLS = {"success_url": "http://localhost:3000/welcome", "cancel_url": "http://localhost:3000/plans"}


def checkout(flow, plan="basic", expect=201, **extra):
    response = flow.client.post("/subscription/checkout", json={"price": flow.prices[plan], **URLS, **extra},
                                headers=flow.headers)
    assert response.status_code == expect, response.json
    return response.json


def complete(flow, session_id, card="pm_card_visa"):
    answer = requests.post(f"{flow.emulator.url}/_emulator/checkout_sessions/{session_id}/complete",
                           json={"payment_method": card}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()
