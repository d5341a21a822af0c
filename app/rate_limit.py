"""The login rate limit while its store (Redis) is down: ``503 service_unavailable`` with ``Retry-After``.

Failing open would let a password guesser through unlimited for as long as the store is down, so
the limited endpoints are refused instead (CONTRACT "Additions": ``service_unavailable``, also when
the rate-limit store is down). The cause is logged at the first failure of an outage and the
recovery when a limit is checked again, once each per worker process, rather than a traceback per
request.
"""
import logging

from flask import current_app
from limits.errors import ConfigurationError as LimitsConfigurationError
from limits.errors import StorageError

from app.config import ConfigError
from app.errors import ServiceUnavailable, handle_app_error
from app.extensions import limiter

log = logging.getLogger(__name__)

# Seconds a client is asked to wait: long enough not to hammer a store being restarted.
RETRY_AFTER = 5


def store_unavailable(error):
    """Answer 503 with ``Retry-After``; log the store's error if it is the first of this outage."""
    state = current_app.extensions["rate_limit_store"]
    if not state["down"]:
        state["down"] = True
        log.error("rate-limit store unreachable, rate-limited endpoints answer 503 until it is back: %r",
                  error.storage_error)
    return handle_app_error(ServiceUnavailable.rate_limit_store(RETRY_AFTER))


def _note_recovery(response):
    state = current_app.extensions["rate_limit_store"]
    if state["down"] and limiter.current_limit is not None:
        state["down"] = False
        log.warning("rate-limit store reachable again")
    return response


def register_rate_limit(app):
    """Bind the limiter with its store's errors wrapped as ``limits``' ``StorageError``, and handle them."""
    app.config.setdefault("RATELIMIT_STORAGE_OPTIONS", {})["wrap_exceptions"] = True
    try:
        limiter.init_app(app)
    except LimitsConfigurationError as exc:
        # A scheme whose client library is not installed (pymemcache for memcached://, ...).
        raise ConfigError(f"RATELIMIT_STORAGE_URI cannot be used: {exc}") from None
    app.extensions["rate_limit_store"] = {"down": False}
    app.register_error_handler(StorageError, store_unavailable)
    app.after_request(_note_recovery)
