"""Steps of a subscription's life driven at the emulator through the stripe SDK, for the emulator's tests."""
import urllib.request

DAY = 86400


def events_of(client, sub_id=None, types=None):
    """All events oldest first (optionally only those about one subscription)."""
    events = list(reversed(client.v1.events.list(params={"limit": 100}).data))
    out = []
    for evt in events:
        obj = evt.data.object.to_dict()
        related = sub_id is None or obj.get("id") == sub_id or obj.get("subscription") == sub_id \
            or (obj.get("parent") or {}).get("subscription_details", {}).get("subscription") \
            == sub_id
        if related and (types is None or evt.type in types):
            out.append(evt)
    return out


def create_incomplete(client, customer, price, **extra):
    return client.v1.subscriptions.create(params={"billing_mode": {"type": "classic"},
        "customer": customer.id, "items": [{"price": price.id, "quantity": 1}],
        "payment_behavior": "default_incomplete",
        "payment_settings": {"save_default_payment_method": "on_subscription"},
        "expand": ["latest_invoice.confirmation_secret"], "metadata": {"user_id": "42"},
        **extra})


def pi_id_of(sub):
    return sub.latest_invoice.confirmation_secret.client_secret.split("_secret_")[0]


def activate(client, customer, price, pm="pm_card_visa"):
    sub = create_incomplete(client, customer, price)
    client.v1.payment_intents.confirm(pi_id_of(sub), params={"payment_method": pm})
    return client.v1.subscriptions.retrieve(sub.id)


def post_form(url, data=None):
    req = urllib.request.Request(url, data=urllib.parse.urlencode(data or {}).encode(),
                                 method="POST")
    with urllib.request.urlopen(req) as resp:  # follows the 303 back to the page
        return resp.status, resp.geturl(), resp.read().decode()


def period_end(sub):
    return sub["items"].data[0].current_period_end


def failing_renewal(stripe_client, emulator, customer, price):
    """An active subscription whose card on file now fails; the clock at its first renewal."""
    sub = activate(stripe_client, customer, price)
    stripe_client.v1.subscriptions.update(sub.id, params={"default_payment_method": "pm_card_chargeCustomerFail"})
    emulator.advance(period_end(sub) - emulator.clock() + 1)
    return sub.id
