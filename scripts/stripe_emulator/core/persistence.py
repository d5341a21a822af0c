"""The emulator's state kept in a JSON file, so that a restart finds its customers, subscriptions and
prices again: ``python -m scripts.stripe_emulator --state-file instance/emulator.json`` (``make run``).

Whatever the ``Store`` holds is saved, without a list of fields: every attribute except the few bound
to the running process. An attribute added to ``Store.reset`` later is saved with the rest, and a
file written before it existed leaves it at its fresh value. JSON has no tuples, sets, Counters or
non-string keys, which the store uses (the idempotency cache is keyed by tuples): they are written as
tagged objects and read back as what they were.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from flask import Flask, request

from .store import Store

# Rebuilt by every start: the locks, the delivery worker's listeners, the API request being handled.
PROCESS_BOUND = frozenset({"lock", "changed", "event_listeners", "request_ctx", "active_clock"})

_TAG = "__emulator_type__"
_DECODERS = {"Counter": lambda items: Counter(dict(items)), "dict": dict, "set": set, "tuple": tuple}


def _tagged(kind: str, items) -> dict:
    return {_TAG: kind, "items": [_encode(item) for item in items]}


def _encode(value):
    if isinstance(value, Counter):
        return _tagged("Counter", [[key, count] for key, count in value.items()])
    if isinstance(value, dict):
        if all(isinstance(key, str) for key in value):
            return {key: _encode(item) for key, item in value.items()}
        return _tagged("dict", [[key, item] for key, item in value.items()])
    if isinstance(value, (set, frozenset)):
        return _tagged("set", value)
    if isinstance(value, tuple):
        return _tagged("tuple", value)
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise TypeError(f"the emulator's state holds a {type(value).__name__}, which has no JSON form here")


def _decode(value):
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if _TAG in value:
        return _DECODERS[value[_TAG]]([_decode(item) for item in value["items"]])
    return {key: _decode(item) for key, item in value.items()}


def save(store: Store, path: Path) -> None:
    """Write the store's state to ``path`` as JSON; replaced whole, so a crash leaves the previous file."""
    with store.lock:  # also keeps two saves from finishing in the wrong order
        state = {name: _encode(value) for name, value in vars(store).items() if name not in PROCESS_BOUND}
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=path.name, suffix=".tmp",
                                         delete=False) as out:
            json.dump(state, out)
        os.replace(out.name, path)


def load(store: Store, path: Path) -> bool:
    """Put the state saved in ``path`` into ``store``; return whether there was a file.

    Raises ``ValueError`` when the file is not one ``save`` wrote.
    """
    try:
        text = path.read_text()
    except FileNotFoundError:
        return False
    saved = json.loads(text)
    if not isinstance(saved, dict) or PROCESS_BOUND & saved.keys():
        raise ValueError("not a saved emulator state")
    state = {name: _decode(value) for name, value in saved.items()}
    with store.lock:
        vars(store).update(state)
        store.changed.notify_all()  # the delivery worker retries the pending deliveries it read
    return True


# How long the saver waits after a change for more before writing: the whole state is one file (a few
# MB after a busy run), so writing it after every POST made the emulator the bottleneck of a load
# that POSTs often (meter events, make test-cluster); a kill loses at most this much.
SAVE_DELAY = 0.5


def persist(app: Flask, path: Path) -> None:
    """Load ``path`` into ``app``'s store now, and save the store there within ``SAVE_DELAY`` seconds of
    every request that may change it (one write for the requests of that time), from a thread of its own.

    The delivery worker's changes (an event's ``pending_webhooks``) are saved with the next such
    request, or by a last ``save`` when the emulator stops (``__main__``).
    """
    store = app.extensions["stripe_emulator"]["store"]
    load(store, path)
    changed = threading.Event()

    def saver():
        while True:
            changed.wait()
            time.sleep(SAVE_DELAY)
            changed.clear()
            save(store, path)

    threading.Thread(target=saver, name="emulator-state-saver", daemon=True).start()

    @app.after_request
    def save_changes(response):
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            changed.set()
        return response
