"""A request id on every request, echoed in ``X-Request-ID`` and stamped on every log record."""
import logging
import re
import uuid

from flask import g, has_request_context, request

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestIdFilter(logging.Filter):
    """Adds ``request_id`` to log records (``-`` outside a request)."""

    def filter(self, record):
        record.request_id = g.get("request_id", "-") if has_request_context() else "-"
        return True


def _assign():
    incoming = request.headers.get("X-Request-ID", "")
    g.request_id = incoming if _SAFE_ID.match(incoming) else uuid.uuid4().hex


def _echo(response):
    response.headers["X-Request-ID"] = g.get("request_id", "")
    return response


def register_request_id(app):
    app.before_request(_assign)
    app.after_request(_echo)
    handler = logging.StreamHandler()
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"))
    root = logging.getLogger("app")
    if not any(isinstance(f, RequestIdFilter) for h in root.handlers for f in h.filters):
        root.addHandler(handler)
    root.setLevel(app.config["LOG_LEVEL"])
