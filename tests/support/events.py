"""Stripe event payloads from ``tests/fixtures`` (and Stripe's OpenAPI examples), delivered signed to the webhook."""
import copy
import json
from datetime import UTC, datetime
from pathlib import Path

from tests.signing import sign

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stripe_events"


def load_event(name, **changes):
    """Return a deep copy of the fixture event whose file name starts with ``name``, top-level keys changed."""
    (path,) = FIXTURES.glob(f"{name}*.json")
    event = copy.deepcopy(json.loads(path.read_text()))
    event.update(changes)
    return event


def deliver(client, event, **sign_options):
    """POST ``event`` (a dict) to the webhook endpoint, signed; return the response."""
    payload = json.dumps(event).encode()
    return client.post("/provider/webhook", data=payload, content_type="application/json",
                       headers={"Stripe-Signature": sign(payload, **sign_options)})


# Stripe's example of every API object (stripe/openapi), copied in so a clone anywhere can run the tests.
OPENAPI_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stripe_openapi" / "fixtures3.json"


def load_fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def openapi_example(resource: str) -> dict:
    return json.loads(OPENAPI_FIXTURES.read_text())["resources"][resource]


CUSTOMER = "cus_00000000000000"


# Inside the fixtures' billing period (they end 2022-04-26), so "active" means entitled.
DURING_PERIOD = datetime(2022, 4, 1, tzinfo=UTC)
