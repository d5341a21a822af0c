"""The one JSON error shape (CONTRACT "Error") and the handlers that answer every failure with it.

Every error leaves the service as ``{"error": {"code", "message", "details"?}}``: the ``AppError``
tree of ``app.errors``, werkzeug's HTTP errors, marshmallow/webargs validation errors, database
lock waits and lost connections, and unexpected exceptions.
"""
import logging
import re

from flask import g, jsonify
from marshmallow import Schema, fields
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException

from app.errors import AppError, ServiceUnavailable

log = logging.getLogger(__name__)


class ErrorBodySchema(Schema):
    code = fields.String(required=True, metadata={"description": "Stable snake_case error code"})
    message = fields.String(required=True, metadata={"description": "A sentence for humans"})
    details = fields.Dict(metadata={"description": "Per-field messages or other structured detail"})


class ErrorSchema(Schema):
    """The one error shape of the API (CONTRACT "Error")."""

    error = fields.Nested(ErrorBodySchema, required=True)


_HTTP_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    422: "validation_error",
}

_HTTP_MESSAGES = {
    404: "No endpoint matches this path.",
    405: "This endpoint does not accept that HTTP method.",
    413: "The request body is larger than the service accepts.",
    422: "The request body is not valid.",
}


def error_response(status, code, message, details=None, headers=None):
    """Build the JSON error response; ``details`` is left out when empty."""
    body = {"code": code, "message": message}
    if details:
        body["details"] = details
    response = jsonify(error=body)
    response.status_code = status
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


def handle_app_error(error):
    """Answer an ``AppError`` with its status, code, message, details and headers."""
    return error_response(error.status, error.code, error.message, error.details, error.headers)


def _validation_details(messages):
    # webargs nests messages by location ({"json": {...}}); the field names are unique across them.
    if isinstance(messages, dict) and set(messages) <= {"json", "query", "headers", "form", "view_args", "path"}:
        merged = {}
        for part in messages.values():
            merged.update(part if isinstance(part, dict) else {"_schema": part})
        return merged
    return messages


def _validation_message(messages):
    # Say where the invalid values were: a bad id in the URL is not a bad request body.
    locations = set(messages) if isinstance(messages, dict) else set()
    if locations == {"query"}:
        return "The query parameters are not valid."
    if locations == {"path"}:
        return f"The path parameters are not valid: {', '.join(messages['path'])}."
    return _HTTP_MESSAGES[422]


def handle_http_exception(error):
    """Map werkzeug's and webargs's ``HTTPException`` onto the one error shape."""
    status = error.code or 500
    data = getattr(error, "data", None) or {}
    messages = data.get("messages")
    headers = dict(data.get("headers") or {})
    if status == 405 and error.valid_methods:
        headers["Allow"] = ", ".join(error.valid_methods)
    code = _HTTP_CODES.get(status) or re.sub(r"\W+", "_", error.name.lower()).strip("_")
    message = _HTTP_MESSAGES.get(status) or error.description or error.name
    if status == 422:
        message = _validation_message(messages)
    details = _validation_details(messages) if status == 422 else None
    return error_response(status, code, message, details, headers)


def handle_unexpected(error):
    """Log an unexpected exception with the request id and answer 500 without internals."""
    log.exception("unhandled error (request id %s)", g.get("request_id", "-"))
    return error_response(500, AppError.code, AppError.message, {"request_id": g.get("request_id")})


# PostgreSQL's lock_not_available (a ``lock_timeout`` ran out) and deadlock_detected: a lock wait failed.
_LOCK_SQLSTATES = frozenset({"55P03", "40P01"})


def is_lock_timeout(error):
    """Whether the database error (a ``DBAPIError``) is a lock wait that gave up, on SQLite or PostgreSQL."""
    orig = error.orig
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    # SQLite reports a busy_timeout that ran out only through the message.
    return sqlstate in _LOCK_SQLSTATES or "database is locked" in str(orig) or "database table is locked" in str(orig)


def handle_database_error(error):
    """Answer a lock wait that timed out or a lost connection with 503 and ``Retry-After``; else 500.

    A lost connection (``connection_invalidated``: the server went away mid-request) has made
    SQLAlchemy discard the pooled connections it opened before, so a retry connects afresh
    (``app.db_pool``).
    """
    if error.connection_invalidated:
        log.warning("database connection lost (request id %s): %s", g.get("request_id", "-"), error.orig)
        return handle_app_error(ServiceUnavailable.connection_lost())
    if not is_lock_timeout(error):
        return handle_unexpected(error)
    log.warning("database lock wait timed out (request id %s): %s", g.get("request_id", "-"), error.orig)
    return handle_app_error(ServiceUnavailable.lock_timeout())


def register_errorhandlers(app):
    """Route every failure, from an ``AppError`` to an unexpected exception, to its handler."""
    app.register_error_handler(AppError, handle_app_error)
    app.register_error_handler(DBAPIError, handle_database_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)
