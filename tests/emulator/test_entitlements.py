"""Stripe Entitlements in the emulator (issue 44 item 1): features, product features, a customer's active
entitlements following its subscriptions, and ``entitlements.active_entitlement_summary.updated``,
driven through the real SDK."""

from __future__ import annotations

import json

import pytest
import stripe

from tests.support.events import openapi_example

SUMMARY = "entitlements.active_entitlement_summary.updated"


def _feature(stripe_client, lookup_key, name=None):
    return stripe_client.v1.entitlements.features.create(params={"lookup_key": lookup_key,
                                                                 "name": name or lookup_key.title()})


def _paying_customer(stripe_client):
    return stripe_client.v1.customers.create(params={
        "email": "ent@example.com", "payment_method": "pm_card_visa",
        "invoice_settings": {"default_payment_method": "pm_card_visa"}})


def _subscribe(stripe_client, customer, price):
    return stripe_client.v1.subscriptions.create(params={"customer": customer.id, "items": [{"price": price.id}]})


def _keys(stripe_client, customer):
    listed = stripe_client.v1.entitlements.active_entitlements.list(params={"customer": customer.id, "limit": 100})
    return sorted(e.lookup_key for e in listed.data)


def _summaries(emulator, customer_id):
    with emulator.store.lock:
        events = sorted(emulator.store.events.values(), key=lambda e: e["_seq"])
        return [json.loads(json.dumps(e["data"]["object"])) for e in events
                if e["type"] == SUMMARY and e["data"]["object"]["customer"] == customer_id]


def test_features_follow_stripes_rules(stripe_client):
    feature = _feature(stripe_client, "sso", "Single sign-on")
    example = openapi_example("entitlements.feature")
    assert set(feature.to_dict()) == set(example)
    assert (feature.object, feature.active, feature.lookup_key) == ("entitlements.feature", True, "sso")
    with pytest.raises(stripe.InvalidRequestError, match="already exists"):
        _feature(stripe_client, "sso")
    with pytest.raises(stripe.InvalidRequestError) as refused:
        _feature(stripe_client, "x" * 81)
    assert refused.value.param == "lookup_key"
    renamed = stripe_client.v1.entitlements.features.update(feature.id, params={"name": "SSO",
                                                                                 "metadata": {"tier": "pro"}})
    assert (renamed.name, renamed.metadata.to_dict()) == ("SSO", {"tier": "pro"})
    assert [f.id for f in stripe_client.v1.entitlements.features.list().data] == [feature.id]
    stripe_client.v1.entitlements.features.update(feature.id, params={"active": False})
    assert stripe_client.v1.entitlements.features.list().data == []
    assert [f.id for f in stripe_client.v1.entitlements.features.list(params={"archived": True}).data] == [feature.id]
    # An archived key may be used again.
    again = _feature(stripe_client, "sso")
    assert stripe_client.v1.entitlements.features.list(params={"lookup_key": "sso"}).data[0].id == again.id
    with pytest.raises(stripe.InvalidRequestError) as refused:
        stripe_client.v1.entitlements.features.create(params={"lookup_key": "y", "name": "Y", "colour": "red"})
    assert refused.value.param == "colour", "validated against the SDK's types"


def test_product_features_attach_list_and_detach(stripe_client, price):
    feature = _feature(stripe_client, "sso")
    attached = stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    assert set(attached.to_dict()) == set(openapi_example("product_feature"))
    assert (attached.object, attached.entitlement_feature.id) == ("product_feature", feature.id)
    with pytest.raises(stripe.InvalidRequestError, match="already attached"):
        stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    listed = stripe_client.v1.products.features.list(price.product)
    assert [pf.id for pf in listed.data] == [attached.id]
    assert stripe_client.v1.products.features.retrieve(price.product, attached.id).entitlement_feature.lookup_key \
        == "sso"
    deleted = stripe_client.v1.products.features.delete(price.product, attached.id)
    assert (deleted.id, deleted.deleted) == (attached.id, True)
    assert stripe_client.v1.products.features.list(price.product).data == []
    archived = _feature(stripe_client, "old")
    stripe_client.v1.entitlements.features.update(archived.id, params={"active": False})
    with pytest.raises(stripe.InvalidRequestError, match="Inactive features"):
        stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": archived.id})
    with pytest.raises(stripe.InvalidRequestError) as missing:
        stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": "feat_test_nope"})
    assert missing.value.code == "resource_missing"


def test_active_entitlements_follow_the_subscription(stripe_client, emulator, price, price2):
    other = stripe_client.v1.products.create(params={"name": "Team"})
    team_price = stripe_client.v1.prices.create(params={"product": other.id, "unit_amount": 5000, "currency": "usd",
                                                        "recurring": {"interval": "month"}})
    sso, audit = _feature(stripe_client, "sso"), _feature(stripe_client, "audit_log")
    stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": sso.id})
    stripe_client.v1.products.features.create(other.id, params={"entitlement_feature": audit.id})
    customer = _paying_customer(stripe_client)
    assert _keys(stripe_client, customer) == []

    sub = _subscribe(stripe_client, customer, price)
    assert sub.status == "active"
    assert _keys(stripe_client, customer) == ["sso"]
    (first,) = _summaries(emulator, customer.id)
    assert set(first) == set(openapi_example("entitlements.active_entitlement_summary"))
    entitlement = first["entitlements"]["data"][0]
    assert set(entitlement) == set(openapi_example("entitlements.active_entitlement"))
    assert (entitlement["lookup_key"], entitlement["feature"], first["entitlements"]["has_more"]) == \
        ("sso", sso.id, False)
    retrieved = stripe_client.v1.entitlements.active_entitlements.retrieve(entitlement["id"],
                                                                           params={"expand": ["feature"]})
    assert retrieved.feature.id == sso.id

    # A swap within the same product changes nothing: no event.
    item = sub["items"].data[0]
    stripe_client.v1.subscriptions.update(sub.id, params={"items": [{"id": item.id, "price": price2.id}]})
    assert len(_summaries(emulator, customer.id)) == 1
    stripe_client.v1.subscriptions.update(sub.id, params={"items": [{"id": item.id, "price": team_price.id}]})
    assert _keys(stripe_client, customer) == ["audit_log"]
    stripe_client.v1.subscriptions.cancel(sub.id)
    assert _keys(stripe_client, customer) == []
    assert [[e["lookup_key"] for e in s["entitlements"]["data"]] for s in _summaries(emulator, customer.id)] == \
        [["sso"], ["audit_log"], []]


def test_an_unpaid_subscription_grants_nothing(stripe_client, emulator, price, customer):
    feature = _feature(stripe_client, "sso")
    stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    sub = stripe_client.v1.subscriptions.create(params={"customer": customer.id, "items": [{"price": price.id}],
                                                        "payment_behavior": "default_incomplete"})
    assert sub.status == "incomplete"
    assert _keys(stripe_client, customer) == [] and _summaries(emulator, customer.id) == []


def test_a_feature_attached_later_reaches_existing_subscriptions_at_their_next_change(stripe_client, emulator,
                                                                                       price):
    customer = _paying_customer(stripe_client)
    _subscribe(stripe_client, customer, price)
    feature = _feature(stripe_client, "sso")
    stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    assert _keys(stripe_client, customer) == []
    emulator.advance(32 * 86400)  # the renewal starts the next billing period
    assert _keys(stripe_client, customer) == ["sso"]


def test_the_summary_carries_ten_and_says_there_are_more(stripe_client, emulator, price):
    for n in range(12):
        feature = _feature(stripe_client, f"f{n:02}")
        stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    customer = _paying_customer(stripe_client)
    _subscribe(stripe_client, customer, price)
    (summary,) = _summaries(emulator, customer.id)
    assert (len(summary["entitlements"]["data"]), summary["entitlements"]["has_more"]) == (10, True)
    assert len(_keys(stripe_client, customer)) == 12
    page = stripe_client.v1.entitlements.active_entitlements.list(params={"customer": customer.id, "limit": 5})
    assert (len(page.data), page.has_more) == (5, True)


def test_active_entitlements_need_a_known_customer(stripe_client):
    with pytest.raises(stripe.InvalidRequestError) as missing:
        stripe_client.v1.entitlements.active_entitlements.list(params={"customer": "cus_nope"})
    assert (missing.value.code, missing.value.param) == ("resource_missing", "customer")
    deleted = stripe_client.v1.customers.create(params={"email": "gone@example.com"})
    stripe_client.v1.customers.delete(deleted.id)
    with pytest.raises(stripe.InvalidRequestError) as missing:
        stripe_client.v1.entitlements.active_entitlements.list(params={"customer": deleted.id})
    assert missing.value.code == "resource_missing"
    with pytest.raises(stripe.InvalidRequestError) as missing:
        stripe_client.v1.entitlements.active_entitlements.retrieve("ent_test_nope")
    assert missing.value.code == "resource_missing"


def test_the_summary_event_is_delivered_to_the_endpoint(stripe_client, emulator, webhook, price):
    feature = _feature(stripe_client, "sso")
    stripe_client.v1.products.features.create(price.product, params={"entitlement_feature": feature.id})
    customer = _paying_customer(stripe_client)
    _subscribe(stripe_client, customer, price)
    emulator.flush()
    types = [e["type"] for e in webhook.wait_for(1)]
    assert SUMMARY in types
    assert types.index("customer.subscription.created") < types.index(SUMMARY)
