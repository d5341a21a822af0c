"""One error tree (CONTRACT "Error"): every failure the API answers on purpose is an ``AppError``.

Each class gives a stable ``code``, an HTTP ``status`` and a default sentence; named constructors
build the precise ones. ``app.error_handlers`` turns them, and every other failure, into the one
JSON error shape. The tree is kept in modules by what its errors are about (``base``,
``accounts``, ``requests``, ``billing``); this package is its one index: import from ``app.errors``.
"""
from app.errors.accounts import (
    AlreadyVerified,
    EmailTaken,
    EmailUnverified,
    InsufficientScope,
    InvalidCredentials,
    InvalidEmailToken,
    OrganizationsFollowEmail,
    TokenReused,
    TooManyTokens,
    Unauthenticated,
    WrongPassword,
)
from app.errors.base import (
    AppError,
    Conflict,
    NotFound,
)
from app.errors.billing import (
    AlreadySubscribed,
    ProviderRejected,
    ProviderUnavailable,
    ServiceUnavailable,
    UnknownPrice,
)
from app.errors.requests import (
    HeaderFieldsTooLarge,
    InvalidJson,
    InvalidPayload,
    InvalidSignature,
    RateLimited,
    UnsupportedMediaType,
    UriTooLong,
)

__all__ = [
    "AlreadySubscribed",
    "AlreadyVerified",
    "AppError",
    "Conflict",
    "EmailTaken",
    "EmailUnverified",
    "HeaderFieldsTooLarge",
    "InsufficientScope",
    "InvalidCredentials",
    "InvalidEmailToken",
    "InvalidJson",
    "InvalidPayload",
    "InvalidSignature",
    "NotFound",
    "OrganizationsFollowEmail",
    "ProviderRejected",
    "ProviderUnavailable",
    "RateLimited",
    "ServiceUnavailable",
    "TokenReused",
    "TooManyTokens",
    "Unauthenticated",
    "UnknownPrice",
    "UnsupportedMediaType",
    "UriTooLong",
    "WrongPassword",
]
