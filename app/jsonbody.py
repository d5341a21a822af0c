"""Request bodies: JSON (RFC 8259), read the same strict way by every endpoint that takes one.

A body is UTF-8 JSON sent as ``application/json`` (or ``application/*+json``; Stripe adds
``; charset=utf-8``). An empty body is no body: the schema then sees no fields, so an endpoint
whose body is optional (``/subscription/portal``) works without one. Everything else the parser
cannot take is ``400 invalid_json``, never a 500 or a guess: bytes that are not UTF-8 (RFC 8259
section 8.1; Python's ``json`` would guess UTF-16 or UTF-32), nesting deeper than the parser's
recursion allows, a number no float can hold (``1e999``), an integer longer than Python converts
(4,300 digits) and the ``NaN``/``Infinity`` literals Python accepts but JSON does not. A non-empty
body of another media type is ``415 unsupported_media_type`` naming ``application/json``.
"""
import json
import math

from marshmallow import missing
from webargs import core
from webargs.flaskparser import FlaskParser

from app.errors import InvalidJson, UnsupportedMediaType


def _finite_float(text):
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number out of range: {text[:40]}")
    return value


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON value")


def loads(data):
    """Return the JSON document in ``data`` (bytes); raise ``InvalidJson`` (400) for anything else."""
    try:
        return json.loads(data.decode("utf-8"), parse_float=_finite_float, parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        # ValueError covers JSONDecodeError, the integer digit limit and the refusals above.
        raise InvalidJson() from None


def require_json(request):
    """Raise ``UnsupportedMediaType`` (415) when ``request`` has a body that is not declared as JSON."""
    data = request.get_data(cache=True)
    if data and not core.is_json(request.mimetype):
        raise UnsupportedMediaType.expecting("application/json", request.mimetype)
    return data


def body(request):
    """Return the request's JSON body, ``missing`` when it is empty; raise as ``loads`` and ``require_json``."""
    data = require_json(request)
    return loads(data) if data else missing


def email_of(request):
    """Return the ``email`` member of the request's JSON body, or ``None`` when there is none to read."""
    try:
        document = body(request)
    except (InvalidJson, UnsupportedMediaType):
        return None  # the view answers these; the rate limit counts the attempt without an email
    return document.get("email") if isinstance(document, dict) else None


class JsonBodyParser(FlaskParser):
    """webargs's Flask parser with the body read by ``body`` above instead of its lenient default."""

    def load_json(self, req, schema):
        return body(req)
