"""One error tree (CONTRACT "Error"): every failure the API answers on purpose is an ``AppError``.

Each class gives a stable ``code``, an HTTP ``status`` and a default sentence; named constructors
build the precise ones. ``app.error_handlers`` turns them, and every other failure, into the one
JSON error shape.
"""


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


class WrongPassword(InvalidCredentials):
    """403 ``invalid_credentials``: the ``current_password``/``password`` a bearer request confirms with is wrong.

    Not 401: the bearer token is good, and a 401 would tell the client to log in again.
    """

    status = 403
    message = "The password is incorrect."


class InvalidEmailToken(AppError):
    """A verification, email-change or reset token that cannot be used, whatever the reason.

    Malformed, tampered, expired, used, or for an account that no longer exists: one code and one
    sentence, so the answer tells a guesser nothing about which.
    """

    status = 400
    code = "invalid_token"
    message = "The link is invalid or has expired; ask for a new one."


class EmailUnverified(AppError):
    status = 403
    code = "email_unverified"
    message = "Verify your email address first (POST /auth/email/verification sends the link again)."


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
        """The user's subscription is in dunning, paused (a trial ended without a card), or a trial awaiting
        its card."""
        return cls(f"The user's subscription is {status}: add a card with POST /subscription/payment-method "
                   "(or in the billing portal) to pay, start or resume it instead of starting another subscription.",
                   details={"status": status})


class TooManyTokens(Conflict):
    code = "too_many_tokens"

    @classmethod
    def over_limit(cls, limit):
        return cls(f"A user may hold at most {limit} live tokens (AUTH_MAX_TOKENS_PER_USER); revoke one first.",
                   details={"limit": limit})


class EmailTaken(Conflict):
    code = "email_taken"
    message = "An account with this email already exists."

    @classmethod
    def yours(cls):
        return cls("This is already your address.")


class AlreadyVerified(Conflict):
    code = "already_verified"
    message = "Your email address is already verified."


class UnknownPrice(AppError):
    status = 422
    code = "unknown_price"

    @classmethod
    def for_price(cls, price):
        return cls(f"Price {price!r} is not offered by this service.", details={"price": price})


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
    """The payment provider could not serve a call of ours now; the message says what happened to it."""

    code = "provider_unavailable"
    message = "The payment provider did not answer in time; try again shortly."

    @classmethod
    def unreachable(cls):
        return cls("The payment provider could not be reached; try again shortly.")

    @classmethod
    def server_error(cls, status=None):
        answered = f" (HTTP {status})" if status else ""
        return cls(f"The payment provider failed with an error{answered}; try again shortly.")

    @classmethod
    def rate_limited(cls):
        return cls("The payment provider is limiting this service's requests; try again shortly.")

    @classmethod
    def key_refused(cls):
        # The operator's to fix; retrying will not help until the key is replaced.
        return cls("The payment provider refused this service's API key (PROVIDER_API_KEY).")


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
