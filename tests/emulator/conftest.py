"""Fixtures for the Stripe emulator tests: one emulator per session, reset per test,
a real ``stripe.StripeClient`` pointed at it, and a webhook receiver."""

from __future__ import annotations

import json
import threading
import time

import pytest
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response


@pytest.fixture
def emulator(emulator):
    """The session's emulator (tests/conftest.py), reset before and after each test."""
    emulator.reset()
    yield emulator
    # Leave nothing queued for the next test's receiver.
    emulator.reset()


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


class Receiver:
    """A tiny webhook receiver recording every request; ``statuses`` scripts answers."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.statuses: list[int] = []  # popped per request; empty -> 200
        self.lock = threading.Lock()
        self.server = make_server("127.0.0.1", 0, self._app, threaded=True,
                                  request_handler=_QuietHandler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/webhook"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)
        self.thread.start()
        self.secret: str | None = None

    @Request.application
    def _app(self, request: Request) -> Response:
        with self.lock:
            status = self.statuses.pop(0) if self.statuses else 200
            self.requests.append({"body": request.get_data(as_text=True),
                                  "headers": dict(request.headers), "status": status})
        return Response("ok" if status < 300 else "fail", status=status)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def events(self, types_prefix: str = "") -> list[dict]:
        with self.lock:
            bodies = [json.loads(r["body"]) for r in self.requests]
        return [e for e in bodies if e["type"].startswith(types_prefix)]

    def wait_for(self, count: int, timeout: float = 5.0) -> list[dict]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.requests) >= count:
                    break
            time.sleep(0.01)
        return self.events()


@pytest.fixture
def receiver():
    rec = Receiver()
    yield rec
    rec.stop()


@pytest.fixture
def webhook(emulator, stripe_client, receiver):
    """A receiver registered for all events, with automatic delivery paused so each test
    decides when to deliver (``emulator.flush()``)."""
    emulator.pause_delivery()
    endpoint = stripe_client.v1.webhook_endpoints.create(
        params={"url": receiver.url, "enabled_events": ["*"]})
    receiver.secret = endpoint.secret
    receiver.endpoint = endpoint
    return receiver


@pytest.fixture
def price(stripe_client):
    return stripe_client.v1.prices.create(params={
        "unit_amount": 1500, "currency": "usd", "recurring": {"interval": "month"},
        "product_data": {"name": "Pro"}, "lookup_key": "pro_monthly"})


@pytest.fixture
def price2(stripe_client, price):
    return stripe_client.v1.prices.create(params={
        "unit_amount": 4000, "currency": "usd", "recurring": {"interval": "month"},
        "product": price.product, "lookup_key": "team_monthly"})


@pytest.fixture
def customer(stripe_client):
    return stripe_client.v1.customers.create(params={"email": "jo@example.com",
                                                     "name": "Jo"})
