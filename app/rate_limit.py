"""Rate limits on the views that declare one, and no work at all on every other request (issue 13).

Built on ``limits``, the library Flask-Limiter itself runs on (storage URIs, strategies and limit
strings are the same: ``RATELIMIT_STORAGE_URI``, ``RATELIMIT_STRATEGY``, ``"10 per minute"``).
Flask-Limiter registers before-request, after-request and teardown hooks that run on every
request of the app whether its view has a limit or not; with none of its options (empty default
limits, exemptions, request filters) do they go away, and they cost 81 us of CPU per request
here, about as much as a minimal Flask app's whole request. A limit here is a decorator that
counts only where it is applied; Flask-Limiter's maintainer points to the same ``limits`` calls
for limiting outside its hooks (alisaifee/flask-limiter#277).

While the store (Redis) is down the limited endpoints answer ``503 service_unavailable`` with
``Retry-After``: failing open would let a password guesser through unlimited for as long as the
store is down (CONTRACT "Additions": ``service_unavailable``, also when the rate-limit store is
down). The cause is logged at the first failure of an outage and the recovery at the first check
that reaches the store again, once each per worker process, rather than a traceback per request.
"""
import logging
import math
import time
from functools import wraps
from urllib.parse import urlsplit

from flask import current_app
from limits import parse
from limits.errors import ConfigurationError as LimitsConfigurationError
from limits.errors import StorageError
from limits.storage import RedisStorage, storage_from_string
from limits.strategies import STRATEGIES

from app.config import ConfigError
from app.errors import RateLimited, ServiceUnavailable

log = logging.getLogger(__name__)

# Seconds a client is asked to wait while the store is down: long enough not to hammer a store
# being restarted.
STORE_RETRY_AFTER = 5
# Seconds a Redis store may take to connect, and to answer one command, before it counts as down.
# redis-py's default is 5 s: with a store that accepts connections but never answers (a hung
# server, a half-dead network path) each login held its sync worker 5 s, so a burst of logins
# stalled every other endpoint too. A healthy store answers a rate-limit check in under a millisecond.
STORE_TIMEOUT = 1.0


class RateLimiter:
    """The app's limiter: ``init_app(app)`` binds the store, ``limit(...)`` decorates a view."""

    def init_app(self, app):
        """Bind the store of ``storage_for(app.config)`` with ``RATELIMIT_STRATEGY``."""
        app.extensions["rate_limiter"] = {"strategy": STRATEGIES[app.config["RATELIMIT_STRATEGY"]](
            storage_for(app.config)), "store_down": False}

    @property
    def storage(self):
        """The current app's ``limits`` store (``check()`` says whether it answers)."""
        return current_app.extensions["rate_limiter"]["strategy"].storage

    def limit(self, limit_value, key_func, scope=None, cost=None):
        """Decorate a view: at most ``limit_value()`` (a limits string) calls per ``key_func()`` value,
        each call counting ``cost()`` (default 1) against it.

        Views decorated with the same ``scope`` (a string) share one count; by default each view
        counts alone. A call over the limit raises ``RateLimited`` (429 ``rate_limited``) with
        ``Retry-After``: whole seconds until the window lets the next call through, at least 1.
        With the store down it raises ``ServiceUnavailable`` (503) with ``Retry-After``.
        """

        def decorator(view):
            counted = scope or f"{view.__module__}.{view.__qualname__}"

            @wraps(view)
            def limited(*args, **kwargs):
                item, key = parse(limit_value()), key_func()
                retry_after = _check(current_app.extensions["rate_limiter"], item, counted, key,
                                     cost() if cost else 1)
                if retry_after is not None:
                    raise RateLimited.retry_after(retry_after)
                return view(*args, **kwargs)

            return limited

        return decorator


def storage_for(config):
    """Return the ``limits`` store named by ``RATELIMIT_STORAGE_URI``; no request is sent to it yet.

    Raises ``ConfigError`` naming the variable when the store's client library is not installed
    (pymemcache for ``memcached://``, ...): gunicorn's master calls this before it forks, so that
    the error is one line there rather than one per worker. ``RATELIMIT_STORAGE_OPTIONS`` (a
    mapping) is passed to the store's constructor; the store's own errors are always wrapped as
    ``limits``' ``StorageError``, whatever the backend. A Redis or Valkey store gets
    ``socket_timeout`` and ``socket_connect_timeout`` of ``STORE_TIMEOUT`` seconds unless those
    options set their own.
    """
    uri = config["RATELIMIT_STORAGE_URI"]
    timeouts = {"socket_timeout": STORE_TIMEOUT, "socket_connect_timeout": STORE_TIMEOUT}
    redis = urlsplit(uri).scheme in RedisStorage.STORAGE_SCHEME
    options = {**(timeouts if redis else {}), **config.get("RATELIMIT_STORAGE_OPTIONS", {}), "wrap_exceptions": True}
    try:
        return storage_from_string(uri, **options)
    except LimitsConfigurationError as exc:
        raise ConfigError(f"RATELIMIT_STORAGE_URI cannot be used: {exc}") from None


def _check(limiter, item, scope, key, cost=1):
    """Count a call of ``cost``; return ``None`` when allowed, else the seconds until the next is."""
    strategy = limiter["strategy"]
    try:
        allowed = strategy.hit(item, scope, key, cost=cost)
        reset_at = None if allowed else strategy.get_window_stats(item, scope, key).reset_time
    except StorageError as error:
        if not limiter["store_down"]:
            limiter["store_down"] = True
            log.error("rate-limit store unreachable, rate-limited endpoints answer 503 until it is back: %r",
                      error.storage_error)
        raise ServiceUnavailable.rate_limit_store(STORE_RETRY_AFTER) from None
    if limiter["store_down"]:
        limiter["store_down"] = False
        log.warning("rate-limit store reachable again")
    return None if allowed else max(1, math.ceil(reset_at - time.time()))
