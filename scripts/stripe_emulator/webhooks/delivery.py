"""Webhook delivery: a background worker POSTing signed events to webhook endpoints.

Every event is queued once per matching enabled endpoint, in creation order. The worker
sends the first due item; a non-2xx answer or a connection error schedules a retry after
the next delay of :data:`RETRY_SCHEDULE` (later items are not held up by it, as on Stripe)
until :data:`MAX_ATTEMPTS` is reached. Tests can pause the worker and ``flush`` the queue
synchronously instead, and can ask for the next events to be reordered or duplicated.

The HTTP send happens outside the store lock (the receiver may call the API back), but
under ``send_lock`` so that the worker and ``flush`` never send the same item twice.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import urllib.error
import urllib.request

from ..core.store import Store, public

# Delay before attempt 2, 3, ... (seconds). Stripe's own schedule is hours; tests need speed.
RETRY_SCHEDULE = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
MAX_ATTEMPTS = len(RETRY_SCHEDULE) + 1
SEND_TIMEOUT_SECONDS = 5.0
LOG_LIMIT = 1000


def signature_header(payload: str, secret: str, timestamp: int | None = None) -> str:
    """``Stripe-Signature`` for ``payload``; timestamp is real wall-clock time, since
    receivers check it against their own clock, not the emulator's."""
    ts = int(time.time()) if timestamp is None else timestamp
    mac = hmac.new(secret.encode(), f"{ts}.{payload}".encode(), hashlib.sha256).hexdigest()
    return f"t={ts},v1={mac}"


class Delivery:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.send_lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.stopping = False
        self._ids = itertools.count(1)
        self.on_reset()
        store.event_listeners.append(self)

    # -- called by the store, under its lock -----------------------------------
    def on_reset(self) -> None:
        self.queue: list[dict] = []
        self.log: list[dict] = []
        self.held: list[list[dict]] = []  # per-event batches waiting to be reversed
        self.paused = False
        self.reorder_left = 0
        self.duplicate_left = 0
        # Results of sends started before a reset are dropped, not logged.
        self.generation = getattr(self, "generation", 0) + 1

    def on_event(self, event: dict, endpoints: list[dict]) -> None:
        if not endpoints:
            return
        copies = 1
        if self.duplicate_left:
            self.duplicate_left -= 1
            copies = 2
        batch = [self._item(event, we) for we in endpoints for _ in range(copies)]
        if self.reorder_left:
            self.reorder_left -= 1
            self.held.append(batch)
            if not self.reorder_left:
                self._release_held()
        else:
            self.queue.extend(batch)
        self.store.changed.notify_all()

    def _item(self, event: dict, we: dict) -> dict:
        return {"id": next(self._ids), "event": event["id"], "type": event["type"],
                "endpoint": we["id"], "url": we["url"], "attempts": 0,
                "next_at": time.monotonic()}

    def _release_held(self) -> None:
        for batch in reversed(self.held):
            self.queue.extend(batch)
        self.held = []

    # -- control ----------------------------------------------------------------
    def set_paused(self, paused: bool) -> None:
        with self.store.lock:
            self.paused = paused
            self.store.changed.notify_all()

    def reorder(self, count: int) -> None:
        with self.store.lock:
            self.reorder_left = count

    def duplicate(self, count: int) -> None:
        with self.store.lock:
            self.duplicate_left = count

    def snapshot(self) -> dict:
        now = time.monotonic()
        with self.store.lock:
            return {
                "paused": self.paused, "reorder_pending": self.reorder_left,
                "duplicate_pending": self.duplicate_left,
                "held": [dict(i, next_at=None) for b in self.held for i in b],
                "queue": [{**{k: v for k, v in i.items() if k != "next_at"},
                           "due_in": max(0.0, round(i["next_at"] - now, 3))}
                          for i in self.queue],
                "log": list(self.log),
            }

    def flush(self) -> dict:
        """Deliver everything queued now, in queue order, one attempt each."""
        attempts = []
        with self.send_lock:
            with self.store.lock:
                self._release_held()
                items, gen = list(self.queue), self.generation
            for item in items:
                status, error = self._send(item)
                entry = self._record(item, status, error, gen)
                if entry:
                    attempts.append({"event": item["event"], "type": item["type"],
                                     "endpoint": item["endpoint"], "status": status,
                                     "error": error})
        ok = sum(1 for a in attempts if a["status"] and 200 <= a["status"] < 300)
        return {"delivered": ok, "failed": len(attempts) - ok, "attempts": attempts}

    # -- worker -----------------------------------------------------------------
    def start(self) -> None:
        self.stopping = False
        self.thread = threading.Thread(target=self._run, name="stripe-emulator-webhooks",
                                       daemon=True)
        self.thread.start()

    def stop(self) -> None:
        with self.store.lock:
            self.stopping = True
            self.store.changed.notify_all()
        if self.thread is not None:
            self.thread.join(timeout=SEND_TIMEOUT_SECONDS + 1)
            self.thread = None

    def _next_due(self) -> tuple[dict | None, float | None]:
        if self.paused or not self.queue:
            return None, None
        now = time.monotonic()
        for item in self.queue:
            if item["next_at"] <= now:
                return item, None
        return None, min(i["next_at"] for i in self.queue) - now

    def _run(self) -> None:
        while True:
            with self.store.changed:
                while not self.stopping:
                    item, wait = self._next_due()
                    if item is not None:
                        break
                    self.store.changed.wait(wait)
                if self.stopping:
                    return
            with self.send_lock:
                with self.store.lock:
                    item, _ = self._next_due()  # flush may have sent it meanwhile
                    gen = self.generation
                if item is not None:
                    status, error = self._send(item)
                    self._record(item, status, error, gen)

    def _send(self, item: dict) -> tuple[int | None, str | None]:
        with self.store.lock:
            event = self.store.events.get(item["event"])
            we = self.store.webhook_endpoints.get(item["endpoint"])
            if event is None or we is None or we["status"] != "enabled":
                return None, "endpoint removed or disabled"
            payload, secret, url = json.dumps(public(event), indent=2), we["_secret"], we["url"]
        req = urllib.request.Request(url, data=payload.encode(), method="POST", headers={
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
            "Stripe-Signature": signature_header(payload, secret)})
        try:
            with urllib.request.urlopen(req, timeout=SEND_TIMEOUT_SECONDS) as resp:
                return resp.status, None
        except urllib.error.HTTPError as err:
            return err.code, None
        except (OSError, ValueError) as err:
            return None, f"{type(err).__name__}: {err}"

    def _record(self, item: dict, status, error, gen) -> dict | None:
        with self.store.lock:
            if gen != self.generation or not any(i is item for i in self.queue):
                return None
            item["attempts"] += 1
            ok = status is not None and 200 <= status < 300
            gone = error == "endpoint removed or disabled"
            entry = {"event": item["event"], "type": item["type"], "endpoint": item["endpoint"],
                     "url": item["url"], "attempt": item["attempts"], "status": status,
                     "error": error, "at": time.time()}
            if ok or gone or item["attempts"] >= MAX_ATTEMPTS:
                self.queue.remove(item)
                event = self.store.events.get(item["event"])
                if event is not None and event["pending_webhooks"] > 0:
                    event["pending_webhooks"] -= 1
                entry["final"] = "delivered" if ok else "gave_up"
            else:
                item["next_at"] = time.monotonic() + RETRY_SCHEDULE[item["attempts"] - 1]
                entry["retry_in"] = RETRY_SCHEDULE[item["attempts"] - 1]
            self.log.append(entry)
            del self.log[:-LOG_LIMIT]
            return entry
