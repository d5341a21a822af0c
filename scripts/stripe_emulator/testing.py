"""Run the emulator in-process for tests.

    from scripts.stripe_emulator.testing import run_emulator

    with run_emulator() as emu:              # free port, background threads
        client = stripe.StripeClient("sk_test_x", base_addresses={"api": emu.url})
        ...
        emu.advance(31 * 86400)              # renewals, period-end cancellations
        emu.flush()                          # deliver queued webhooks now

``RunningEmulator`` can also be started and stopped explicitly (``start()``/``stop()``),
e.g. from a session-scoped pytest fixture. Control helpers call the ``/_emulator``
endpoints over HTTP, so they behave exactly as for an out-of-process emulator.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

from werkzeug.serving import WSGIRequestHandler, make_server

from .app import create_app


class _QuietHandler(WSGIRequestHandler):
    """Keep test output clean: no per-request access log lines."""

    def log_request(self, *args, **kwargs) -> None:
        pass


class EmulatorControlError(RuntimeError):
    """A control endpoint answered with a non-2xx status."""


class RunningEmulator:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.app = create_app(start_worker=False)
        self._server = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> RunningEmulator:
        self._server = make_server(self.host, self.port, self.app, threaded=True,
                                   request_handler=_QuietHandler)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,),
                                        name="stripe-emulator-http", daemon=True)
        self._thread.start()
        self.delivery.start()
        return self

    def stop(self) -> None:
        self.delivery.stop()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = self._thread = None

    def __enter__(self) -> RunningEmulator:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def store(self):
        """The in-process state (read it under ``store.lock``); for debugging tests."""
        return self.app.extensions["stripe_emulator"]["store"]

    @property
    def delivery(self):
        return self.app.extensions["stripe_emulator"]["delivery"]

    # -- control endpoints -------------------------------------------------------
    def control(self, method: str, path: str, body: dict | None = None) -> Any:
        """Call ``/_emulator/<path>`` with a JSON body and return the decoded JSON."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            f"{self.url}/_emulator/{path.lstrip('/')}", data=data, method=method.upper(),
            headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            raise EmulatorControlError(f"{method} {path}: {err.code} {err.read()!r}") from None

    def reset(self) -> dict:
        return self.control("POST", "reset")

    def clock(self) -> int:
        return self.control("GET", "clock")["now"]

    def advance(self, seconds: float) -> dict:
        return self.control("POST", "clock/advance", {"seconds": seconds})

    def fail_next_renewal(self, subscription_id: str) -> dict:
        return self.control("POST", "fail_next_renewal", {"subscription": subscription_id})

    def pause_delivery(self) -> dict:
        return self.control("POST", "delivery/pause")

    def resume_delivery(self) -> dict:
        return self.control("POST", "delivery/resume")

    def flush(self) -> dict:
        return self.control("POST", "delivery/flush")

    def delivery_state(self) -> dict:
        return self.control("GET", "delivery")

    def reorder(self, count: int) -> dict:
        return self.control("POST", "delivery/reorder", {"count": count})

    def duplicate(self, count: int) -> dict:
        return self.control("POST", "delivery/duplicate", {"count": count})

    def add_fault(self, path_prefix: str = "/v1/", status: int | None = 500, count: int = 1,
                  delay_seconds: float = 0, probability: float = 1, after: bool = False,
                  method: str | None = None) -> dict:
        """Fail (``status``) or slow (``delay_seconds``) the next ``count`` matching requests (under
        ``path_prefix``, of ``method`` when given), each with ``probability``; ``after``: once the request
        was done, so its effect stays but its answer is lost."""
        return self.control("POST", "faults", {"path_prefix": path_prefix, "method": method, "status": status,
                                               "count": count, "delay_seconds": delay_seconds,
                                               "probability": probability, "after": after})

    def clear_faults(self) -> dict:
        return self.control("DELETE", "faults")

    def state(self) -> dict:
        return self.control("GET", "state")


@contextlib.contextmanager
def run_emulator(port: int = 0, host: str = "127.0.0.1") -> Iterator[RunningEmulator]:
    """Start an emulator on ``host:port`` (0 = a free port) and stop it on exit."""
    emulator = RunningEmulator(host, port).start()
    try:
        yield emulator
    finally:
        emulator.stop()
