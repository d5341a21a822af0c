"""The edge of the ``/v1`` API: form decoding, auth, faults, idempotency, validation, errors.

:func:`endpoint` wraps each API view so that it runs the way Stripe processes a request:
authenticate, apply any injected fault, replay a stored response for a reused
``Idempotency-Key``, check the parameters against the SDK's types for the operation
(``validation/``), then run the handler under the store lock and answer JSON (or a Stripe-shaped
error).
"""

from __future__ import annotations

import functools
import json
import random
import re
import time
from collections.abc import Callable

from flask import Response, current_app, request

from .. import validation
from .store import DEFAULT_API_VERSION, Store, StripeError, new_id

_KEY = re.compile(r"([^\[\]]+)|\[([^\[\]]*)\]")


def store() -> Store:
    return current_app.extensions["stripe_emulator"]["store"]


def parse_params(pairs) -> dict:
    """Decode Stripe's bracketed form keys (``items[0][price]``, ``expand[]``) to nesting.

    Dicts whose keys are all integers become lists ordered by index, because the SDK
    sends arrays as ``key[0]``, ``key[1]``; ``key[]`` appends.
    """
    root: dict = {}
    for raw_key, value in pairs:
        parts = [a or b for a, b in _KEY.findall(raw_key)]
        if not parts:
            continue
        node = root
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if part == "":
                part = str(len(node))
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
                if not isinstance(node, dict):
                    raise StripeError(400, f"Invalid parameter: {raw_key}", param=raw_key)
    return _listify(root)


def _listify(node):
    if not isinstance(node, dict):
        return node
    node = {k: _listify(v) for k, v in node.items()}
    if node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node


def json_response(body, status: int = 200, headers: dict | None = None) -> Response:
    resp = Response(json.dumps(body, indent=2), status=status, mimetype="application/json")
    resp.headers["Request-Id"] = getattr(request, "_emulator_request_id", new_id("req_", 14))
    resp.headers["Stripe-Version"] = request.headers.get("Stripe-Version", DEFAULT_API_VERSION)
    for key, value in (headers or {}).items():
        resp.headers[key] = value
    return resp


def error_response(err: StripeError) -> Response:
    return json_response(err.response_body(), err.status)


def _api_key() -> str | None:
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        return auth[7:].strip()
    if request.authorization and request.authorization.type == "basic":
        return request.authorization.username
    return None


def _check_auth() -> str:
    key = _api_key()
    if not key:
        raise StripeError(401, "You did not provide an API key. You need to provide your API "
                          "key in the Authorization header, using Bearer auth (e.g. "
                          "'Authorization: Bearer YOUR_SECRET_KEY').")
    if not key.startswith(("sk_test_", "rk_test_")):
        raise StripeError(401, f"Invalid API Key provided: {key[:8]}****",
                          code="api_key_invalid")
    return key


def _take_fault(st: Store) -> dict | None:
    """The first matching fault, taken (``count`` down by one) with its ``probability`` (default 1)."""
    with st.lock:
        for fault in st.faults:
            if request.path.startswith(fault["path_prefix"]) and fault["count"] > 0 \
                    and fault.get("method") in (None, request.method) \
                    and random.random() < fault.get("probability", 1):
                fault["count"] -= 1
                if fault["count"] == 0:
                    st.faults.remove(fault)
                return dict(fault)
    return None


def _fault_error(status: int) -> StripeError:
    if status == 429:
        return StripeError(429, "Request rate limit exceeded.", code="rate_limit")
    return StripeError(status, "An unknown error occurred (injected by the emulator).",
                       type="api_error")


def _apply_fault(fault: dict) -> None:
    # Sleep outside the lock so a slow fault does not stall other requests.
    time.sleep(fault.get("delay_seconds") or 0)
    if fault.get("status"):
        raise _fault_error(int(fault["status"]))


def endpoint(required: tuple = ()) -> Callable:
    """Decorate a view ``fn(st, params, **url_args) -> (body, status)`` or ``body``.

    ``params`` are the request's, checked and read as the SDK types them (integers, booleans).
    ``required`` names parameters the SDK types leave optional but the emulator needs (it does not
    emulate the alternatives, e.g. ``customer_account`` for ``customer``).
    """

    def decorate(fn):
        @functools.wraps(fn)
        def view(**kwargs):
            request._emulator_request_id = new_id("req_", 14)
            st = store()
            try:
                api_key = _check_auth()
                fault = _take_fault(st)
                if fault and not fault.get("after"):
                    _apply_fault(fault)
                pairs = list(request.args.items(multi=True))
                if request.method == "POST":
                    pairs += list(request.form.items(multi=True))
                answer = _run(st, fn, api_key, params=parse_params(pairs), required=required, kwargs=kwargs)
                if fault and fault.get("after"):
                    _apply_fault(fault)  # done, but the answer is late or lost (a crash after Stripe's commit)
                return answer
            except StripeError as err:
                return error_response(err)

        return view

    return decorate


def _run(st, fn, api_key, params, required, kwargs):
    idem_key = request.headers.get("Idempotency-Key") if request.method != "GET" else None
    fingerprint = json.dumps([request.method, request.path, params], sort_keys=True)
    with st.lock:
        replay = _replay(st, api_key, idem_key, fingerprint) if idem_key else None
        if replay is not None:
            return replay
        params = validation.check(request.method, request.url_rule.rule, params)
        _require(params, required)
        st.request_ctx = {"id": request._emulator_request_id, "idempotency_key": idem_key,
                          "api_version": request.headers.get("Stripe-Version")
                          or DEFAULT_API_VERSION}
        try:
            with st.on_clock(_clock(st, params, kwargs)):
                result = fn(st, params, **kwargs)
            body, status = result if isinstance(result, tuple) else (result, 200)
        except StripeError as err:
            body, status = err.response_body(), err.status
        finally:
            st.request_ctx = {"id": None, "idempotency_key": None,
                              "api_version": DEFAULT_API_VERSION}
        if idem_key:
            st.idempotency[(api_key, idem_key)] = {
                "fingerprint": fingerprint, "body": body, "status": status,
                "request_id": request._emulator_request_id}
        return json_response(body, status)


def _replay(st, api_key, idem_key, fingerprint):
    stored = st.idempotency.get((api_key, idem_key))
    if stored is None:
        return None
    if stored["fingerprint"] != fingerprint:
        raise StripeError(400, "Keys for idempotent requests can only be used with the same "
                          "parameters they were first used with. Try using a key other than "
                          f"'{idem_key}' if you meant to execute a different request.",
                          type="idempotency_error")
    return json_response(stored["body"], stored["status"],
                         {"Idempotent-Replayed": "true",
                          "Original-Request": stored["request_id"]})


def _require(params, required):
    for key in required:
        if params.get(key) in (None, ""):
            raise StripeError(400, f"Missing required param: {key}.", code="parameter_missing", param=key)


def _clock(st, params, url_args) -> str | None:
    """The test clock whose time the request's objects live in: its customer's (``test_clock`` on create)."""
    if isinstance(params.get("test_clock"), str) and params["test_clock"] in st.test_clocks:
        return params["test_clock"]
    for obj_id in (*url_args.values(), params.get("customer"), params.get("subscription")):
        if clock := st.clock_of(obj_id):
            return clock
    return None
