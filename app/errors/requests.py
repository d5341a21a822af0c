"""Errors of the request itself: its body, headers, signature and rate, refused before any feature runs."""

from app.errors.base import AppError


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
