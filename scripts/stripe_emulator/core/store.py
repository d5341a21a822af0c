"""In-memory state of the emulator: objects, events, clock, idempotency cache, faults.

Everything lives in one :class:`Store` guarded by one re-entrant lock. API handlers,
the billing-portal pages and the control endpoints all run their whole mutation under
that lock, so a request sees a consistent world and events are numbered in the order
their state changes happened. The webhook worker (``delivery.py``) shares the lock's
condition variable to wake up when new events are queued.
"""

from __future__ import annotations

import contextlib
import copy
import secrets
import string
import threading
import time
from collections import Counter
from typing import Any

from .collections import COLLECTION_NAMES, PREFIX_COLLECTION

DEFAULT_API_VERSION = "2026-10-28.endive"

_ALPHABET = string.ascii_letters + string.digits

class StripeError(Exception):
    """An error answered to the client in Stripe's ``{"error": {...}}`` envelope."""

    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None, **extra: Any):
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "type": type}
        if code is not None:
            self.body["code"] = code
            self.body["doc_url"] = f"https://stripe.com/docs/error-codes/{code.replace('_', '-')}"
        if param is not None:
            self.body["param"] = param
        self.body.update(extra)

    def response_body(self) -> dict:
        return {"error": self.body}


def missing(collection: str, obj_id: str, param: str = "id") -> StripeError:
    return StripeError(404, f"No such {COLLECTION_NAMES[collection]}: '{obj_id}'",
                       code="resource_missing", param=param)


def new_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


class Store:
    """All emulator state. Callers hold ``self.lock`` while reading or mutating."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        # Signalled whenever the delivery queue changes, so the worker can wake up.
        self.changed = threading.Condition(self.lock)
        # Where the emulator answers, for the URLs of its hosted pages (set by every request).
        self.base_url = "http://127.0.0.1:12111"
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.clock_offset = 0.0
            self.customers: dict[str, dict] = {}
            self.subscriptions: dict[str, dict] = {}
            self.subscription_schedules: dict[str, dict] = {}
            self.invoices: dict[str, dict] = {}
            self.payment_intents: dict[str, dict] = {}
            self.payment_methods: dict[str, dict] = {}
            self.setup_intents: dict[str, dict] = {}
            self.events: dict[str, dict] = {}
            self.webhook_endpoints: dict[str, dict] = {}
            self.products: dict[str, dict] = {}
            self.prices: dict[str, dict] = {}
            self.portal_sessions: dict[str, dict] = {}
            self.portal_configurations: dict[str, dict] = {}
            self.test_clocks: dict[str, dict] = {}
            # One fingerprint per test card in this account, as Stripe gives one per card number.
            self.card_fingerprints: dict[str, str] = {}
            self.coupons: dict[str, dict] = {}
            self.promotion_codes: dict[str, dict] = {}
            self.discounts: dict[str, dict] = {}
            self.checkout_sessions: dict[str, dict] = {}
            self.tax_ids: dict[str, dict] = {}
            # Billing meters, the events they count, and when each identifier was last received.
            self.meters: dict[str, dict] = {}
            self.meter_events: list[dict] = []
            self.meter_identifiers: dict[str, int] = {}
            # Events accepted but not counted, as Stripe's meter error reports list them.
            self.meter_error_reports: list[dict] = []
            # Entitlements Features, their attachments to products, and each customer's active entitlements.
            self.entitlement_features: dict[str, dict] = {}
            self.product_features: dict[str, dict] = {}
            self.active_entitlements: dict[str, dict] = {}
            self.idempotency: dict[tuple[str, str], dict] = {}
            self.faults: list[dict] = []
            # Webhook deliveries waiting for a first attempt or a retry (``webhooks/delivery.py``).
            self.webhook_queue: list[dict] = []
            self.fail_next_renewal: set[str] = set()
            # API requests served, by "METHOD /v1/<resource>": what a client cost the provider.
            self.api_requests: Counter[str] = Counter()
            # Context of the API request being handled, copied into each event's ``request``.
            self.request_ctx: dict = {"id": None, "idempotency_key": None,
                                      "api_version": DEFAULT_API_VERSION}
            # The test clock whose time ``now()`` tells while its customers' objects change (``on_clock``).
            self.active_clock: str | None = None
            # Listeners called with each new event (the delivery worker registers one).
            # Kept across resets because the worker outlives them.
            if not hasattr(self, "event_listeners"):
                self.event_listeners: list = []
            for listener in self.event_listeners:
                getattr(listener, "on_reset", lambda: None)()
            self.changed.notify_all()

    # -- clock ---------------------------------------------------------------
    def now(self) -> int:
        """The time objects change at: the active test clock's frozen time, else the emulator's clock
        (real time plus whatever ``/_emulator/clock/advance`` added)."""
        clock = self.test_clocks.get(self.active_clock or "")
        return clock["frozen_time"] if clock else int(time.time() + self.clock_offset)

    @contextlib.contextmanager
    def on_clock(self, clock_id: str | None):
        """Within the block, ``now()`` is ``clock_id``'s frozen time (``None``: the emulator's clock)."""
        outer, self.active_clock = self.active_clock, clock_id
        try:
            yield
        finally:
            self.active_clock = outer

    def clock_of(self, obj_id) -> str | None:
        """The test clock of the customer ``obj_id`` is or belongs to (a subscription, invoice, intent...)."""
        obj = self.lookup(obj_id) if isinstance(obj_id, str) else None
        if obj is not None and obj.get("object") != "customer":
            obj = self.customers.get(obj.get("customer") or "")
        return (obj or {}).get("test_clock")

    # -- objects -------------------------------------------------------------
    def collection_for(self, obj_id: str) -> str | None:
        for prefix, name in PREFIX_COLLECTION.items():
            if obj_id.startswith(prefix):
                return name
        return None

    def get(self, collection: str, obj_id: Any, param: str = "id") -> dict:
        obj = getattr(self, collection).get(obj_id) if isinstance(obj_id, str) else None
        if obj is None:
            raise missing(collection, str(obj_id), param)
        return obj

    def lookup(self, obj_id: str) -> dict | None:
        collection = self.collection_for(obj_id)
        # A coupon's id is whatever its creator chose (``LAUNCH20``): no prefix tells it apart.
        return getattr(self, collection).get(obj_id) if collection else self.coupons.get(obj_id)

    # -- events --------------------------------------------------------------
    def emit(self, type_: str, obj: dict, previous: dict | None = None) -> dict | None:
        """Record an event whose ``data.object`` is a snapshot of ``obj`` now.

        ``previous`` is the snapshot taken before the mutation; for ``*.updated`` events
        ``previous_attributes`` is computed from it, and no event is recorded when nothing
        changed (Stripe does not announce no-op updates either).
        """
        data: dict = {"object": public(obj)}
        if previous is not None:
            prev = diff(previous, data["object"])
            if not prev:
                return None
            data["previous_attributes"] = prev
        endpoints = [we for we in self.webhook_endpoints.values() if endpoint_matches(we, type_)]
        event = {
            "id": new_id("evt_"),
            "object": "event",
            "api_version": self.request_ctx.get("api_version") or DEFAULT_API_VERSION,
            "created": self.now(),
            "data": data,
            "livemode": False,
            "pending_webhooks": len(endpoints),
            "request": {"id": self.request_ctx.get("id"),
                        "idempotency_key": self.request_ctx.get("idempotency_key")},
            "type": type_,
            # Creation order; ``created`` has one-second resolution so it cannot order events.
            "_seq": len(self.events),
        }
        self.events[event["id"]] = event
        for listener in self.event_listeners:
            listener.on_event(event, endpoints)
        return event


def endpoint_matches(endpoint: dict, type_: str) -> bool:
    if endpoint.get("status") != "enabled":
        return False
    events = endpoint.get("enabled_events") or []
    return "*" in events or type_ in events


def public(obj: dict) -> dict:
    """Deep copy without the emulator's private ``_``-prefixed bookkeeping keys."""
    if isinstance(obj, dict):
        return {k: public(v) for k, v in obj.items() if not k.startswith("_")}
    if isinstance(obj, list):
        return [public(v) for v in obj]
    return copy.copy(obj)


def diff(before: dict, after: dict) -> dict:
    """Old values of the keys that differ, the way ``previous_attributes`` reports them.

    Plain nested hashes (``invoice_settings``, ``metadata``) are diffed key by key, as
    Stripe does; list objects (``items``) and other values are reported whole.
    """
    out: dict = {}
    for key in before.keys() | after.keys():
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if (isinstance(old, dict) and isinstance(new, dict)
                and old.get("object") != "list" and "object" not in old):
            out[key] = diff(old, new)
        else:
            out[key] = copy.deepcopy(old)
    return out


def merge_metadata(obj: dict, metadata) -> None:
    """Stripe semantics: ``metadata=""`` clears all keys, ``metadata[k]=""`` removes k."""
    if metadata in (None, ""):
        obj["metadata"] = {}
        return
    merged = dict(obj["metadata"])
    for key, value in metadata.items():
        if value in (None, ""):
            merged.pop(key, None)
        else:
            merged[key] = str(value)
    obj["metadata"] = merged
