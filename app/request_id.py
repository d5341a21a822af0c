"""A request id on every request, echoed in ``X-Request-ID`` and stamped on every log record
(``app.observability.logs.RequestContextFilter``)."""
import re
import uuid

from flask import g, request

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def _assign():
    incoming = request.headers.get("X-Request-ID", "")
    g.request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex


def _echo(response):
    response.headers["X-Request-ID"] = g.get("request_id", "")
    return response


def register_request_id(app):
    app.before_request(_assign)
    app.after_request(_echo)
