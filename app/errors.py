"""One error tree and one JSON error shape (CONTRACT "Error") for every failure the API can answer.

Every error leaves the service as ``{"error": {"code", "message", "details"?}}``; werkzeug's
HTTP errors, marshmallow/webargs validation errors and unexpected exceptions are mapped onto it.
"""
import logging
import re

from flask import g, jsonify
from marshmallow import Schema, fields
from sqlalchemy.exc import DBAPIError
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)


class AppError(Exception):
    """Base of every error the API answers on purpose: a ``code``, an HTTP ``status`` and a sentence."""

    status = 500
    code = "internal_error"
    message = "The server hit an unexpected error."

    def __init__(self, message=None, *, details=None, headers=None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details
        self.headers = headers or {}


class InvalidCredentials(AppError):
    status = 401
    code = "invalid_credentials"
    message = "The email or password is incorrect."


class Unauthenticated(AppError):
    """401 with an RFC 6750 ``WWW-Authenticate`` challenge (section 3)."""

    status = 401
    code = "unauthenticated"
    message = "A valid bearer token is required."

    @classmethod
    def missing_token(cls):
        # RFC 6750 3.1: a request without credentials gets no error code in the challenge.
        return cls(headers={"WWW-Authenticate": 'Bearer realm="api"'})

    @classmethod
    def invalid_token(cls, reason):
        challenge = f'Bearer realm="api", error="invalid_token", error_description="{reason}"'
        return cls(f"The bearer token is invalid: {reason}.", headers={"WWW-Authenticate": challenge})


class TokenReused(Unauthenticated):
    """A token already rotated out by refresh came back after the grace window: its family was revoked.

    A distinct class because the revocation must be committed although the request fails.
    """

    @classmethod
    def detected(cls):
        challenge = 'Bearer realm="api", error="invalid_token", error_description="token reuse detected"'
        return cls("The bearer token was already rotated out by a refresh; every token of its refresh chain "
                   "is now revoked. Log in again.", headers={"WWW-Authenticate": challenge})


class InsufficientScope(AppError):
    """403 with an RFC 6750 ``insufficient_scope`` challenge (section 3.1): the token lacks an ability."""

    status = 403
    code = "insufficient_scope"

    @classmethod
    def for_ability(cls, ability):
        return cls(f"The bearer token lacks the ability {ability!r}.", details={"ability": ability},
                   headers={"WWW-Authenticate": f'Bearer error="insufficient_scope", scope="{ability}"'})


class NotFound(AppError):
    status = 404
    code = "not_found"
    message = "The requested resource does not exist."


class Conflict(AppError):
    status = 409
    code = "conflict"
    message = "The request conflicts with the current state."


class AlreadySubscribed(Conflict):
    code = "already_subscribed"
    message = "The user already has an active subscription."

    @classmethod
    def needs_card(cls, status):
        """The user's subscription is in dunning or paused (a trial ended without a card)."""
        return cls(f"The user's subscription is {status}: add a card with POST /subscription/payment-method "
                   "(or in the billing portal) to pay or resume it instead of starting another subscription.",
                   details={"status": status})


class NotSubscribed(Conflict):
    """409: the user has no subscription the action applies to (CONTRACT "Additions (third round)")."""

    code = "not_subscribed"
    message = "The user has no live subscription to change; start one with POST /subscription/intent."


class SubscriptionEnded(Conflict):
    code = "subscription_ended"
    message = ("The subscription has ended and can no longer be resumed; start a new one with "
               "POST /subscription/intent.")


class SubscriptionPastDue(Conflict):
    """409: a change to a subscription whose renewal payment failed; the payment comes first."""

    code = "subscription_past_due"

    @classmethod
    def for_status(cls, status):
        return cls(f"The subscription is {status}: update the payment method (POST /subscription/payment-method "
                   "or the billing portal) so that the open invoice is paid, then change the subscription.",
                   details={"status": status})


class PaymentRequired(AppError):
    """402: the provider kept the old subscription because the change's invoice was not paid."""

    status = 402
    code = "payment_required"

    @classmethod
    def for_invoice(cls, invoice):
        """``invoice``: the provider's invoice dict, ``confirmation_secret`` expanded."""
        return cls("The change's invoice was not paid (the card was declined or needs authentication), so the "
                   "subscription keeps its current price. Confirm the payment with client_secret, or pay at "
                   "hosted_invoice_url, within 23 hours to apply the change.",
                   details={"client_secret": ((invoice.get("confirmation_secret") or {}).get("client_secret")),
                            "hosted_invoice_url": invoice.get("hosted_invoice_url"),
                            "invoice": invoice.get("id")})


class TooManyTokens(Conflict):
    code = "too_many_tokens"

    @classmethod
    def over_limit(cls, limit):
        return cls(f"A user may hold at most {limit} live tokens (AUTH_MAX_TOKENS_PER_USER); revoke one first.",
                   details={"limit": limit})


class EmailTaken(Conflict):
    code = "email_taken"
    message = "An account with this email already exists."


class UnknownPrice(AppError):
    status = 422
    code = "unknown_price"

    @classmethod
    def for_price(cls, price):
        return cls(f"Price {price!r} is not offered by this service.", details={"price": price})


class InvalidCursor(AppError):
    """422 ``validation_error``: ``starting_after`` names no item of the list being paged."""

    status = 422
    code = "validation_error"

    @classmethod
    def for_id(cls, starting_after):
        message = f"No item {starting_after!r} in this list to start after."
        return cls("The query parameters are not valid.", details={"starting_after": [message]})


class InvalidIdempotencyKey(AppError):
    status = 400
    code = "invalid_idempotency_key"
    message = "The Idempotency-Key header must be 1 to 255 printable characters (a UUID, say)."


class IdempotencyKeyReused(AppError):
    status = 422
    code = "idempotency_key_reused"
    message = ("This Idempotency-Key was already used with another request; send a new key for a new "
               "request.")


class InvalidJson(AppError):
    """A body that is not JSON (RFC 8259) the service can read; see ``app.jsonbody``."""

    status = 400
    code = "invalid_json"
    message = "The request body is not valid JSON."


class UnsupportedMediaType(AppError):
    status = 415
    code = "unsupported_media_type"
    message = "The request body must be JSON, sent with Content-Type: application/json."

    @classmethod
    def expecting(cls, expected, received):
        return cls(f"The request body must be sent with Content-Type: {expected}.",
                   details={"expected": expected, "received": received or None})


class UriTooLong(AppError):
    status = 414
    code = "uri_too_long"
    message = "The URL is longer than the service accepts."


class HeaderFieldsTooLarge(AppError):
    status = 431
    code = "request_header_fields_too_large"
    message = "The request headers are larger than the service accepts."


class InvalidSignature(AppError):
    status = 400
    code = "invalid_signature"
    message = "The webhook signature could not be verified."


class InvalidPayload(AppError):
    status = 400
    code = "invalid_payload"
    message = "The webhook payload is not a provider event."


class RateLimited(AppError):
    status = 429
    code = "rate_limited"
    message = "Too many requests; retry after the time given in Retry-After."

    @classmethod
    def retry_after(cls, seconds):
        """``seconds`` (whole, at least 1) until the limit lets the next request through."""
        return cls(headers={"Retry-After": str(seconds)})


class ServiceUnavailable(AppError):
    status = 503
    code = "service_unavailable"
    message = "The service is temporarily unavailable."

    @classmethod
    def lock_timeout(cls):
        # Another request holds the row (or, on SQLite, the database) across provider calls; a
        # second try usually finds it free, so the client is told to retry rather than shown a 500.
        return cls("Another request is updating the same data; try again shortly.",
                   headers={"Retry-After": "1"})

    @classmethod
    def connection_lost(cls):
        return cls("The database connection was lost; try again shortly.", headers={"Retry-After": "1"})

    @classmethod
    def not_configured(cls, name):
        # The operator's mistake, not the client's: 503 so that the provider keeps retrying
        # (for up to three days) until the setting is fixed, instead of dropping the events.
        return cls(f"The service is not configured for this endpoint: {name} is not set.")

    @classmethod
    def rate_limit_store(cls, retry_after):
        # Failing closed: without its counter, login would take unlimited password guesses.
        return cls("The rate-limit store is not answering; try again shortly.",
                   headers={"Retry-After": str(retry_after)})


class ProviderUnavailable(ServiceUnavailable):
    code = "provider_unavailable"
    message = "The payment provider did not answer in time; try again shortly."


class ProviderRejected(AppError):
    """The payment provider refused a request of ours with a 4xx (``InvalidRequestError`` and the like).

    502 Bad Gateway, not 422 or 503: the request to the provider is built from our stored state
    (e.g. a customer the provider no longer knows), so the client can fix it neither by changing its
    body (client input the provider would refuse is validated first) nor by waiting. The provider's
    own message stays in the log, as it names other objects' ids; only its error code is shown.
    """

    status = 502
    code = "provider_rejected"
    message = "The payment provider refused the request."

    @classmethod
    def for_call(cls, what, provider_code=None):
        return cls(f"The payment provider refused the request ({what}).",
                   details={"provider_code": provider_code} if provider_code else None)


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
    return error_response(error.status, error.code, error.message, error.details, error.headers)


def _validation_details(messages):
    # webargs nests messages by location ({"json": {...}}); the field names are unique across them.
    if isinstance(messages, dict) and set(messages) <= {"json", "query", "headers", "form", "view_args", "path"}:
        merged = {}
        for part in messages.values():
            merged.update(part if isinstance(part, dict) else {"_schema": part})
        return merged
    return messages


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
    if status == 422 and isinstance(messages, dict) and set(messages) == {"query"}:
        message = "The query parameters are not valid."
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
    app.register_error_handler(AppError, handle_app_error)
    app.register_error_handler(DBAPIError, handle_database_error)
    app.register_error_handler(HTTPException, handle_http_exception)
    app.register_error_handler(Exception, handle_unexpected)
