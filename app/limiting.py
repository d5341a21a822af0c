"""Rate limits on the views that declare one, and no work at all on every other request (issue 13).

Built on ``limits``, the library Flask-Limiter itself runs on (storage URIs, strategies and limit
strings are the same: ``RATELIMIT_STORAGE_URI``, ``RATELIMIT_STRATEGY``, ``"10 per minute"``).
Flask-Limiter registers before-request, after-request and teardown hooks that run on every
request of the app whether its view has a limit or not; with none of its options (empty default
limits, exemptions, request filters) do they go away, and they cost 81 us of CPU per request
here, about as much as a minimal Flask app's whole request. A limit here is a decorator that
counts only where it is applied; its maintainer points to the same ``limits`` calls for limiting
outside Flask-Limiter's hooks (alisaifee/flask-limiter#277).
"""
import math
import time
from functools import wraps

from flask import current_app
from limits import parse
from limits.storage import storage_from_string
from limits.strategies import STRATEGIES

from app.errors import RateLimited


class RateLimiter:
    """The app's limiter: ``init_app(app)`` binds the store, ``limit(...)`` decorates a view."""

    def init_app(self, app):
        """Connect the store named by ``RATELIMIT_STORAGE_URI`` with ``RATELIMIT_STRATEGY``.

        ``RATELIMIT_STORAGE_OPTIONS`` (a mapping) is passed to the store's constructor.
        """
        storage = storage_from_string(app.config["RATELIMIT_STORAGE_URI"],
                                      **app.config.get("RATELIMIT_STORAGE_OPTIONS", {}))
        app.extensions["rate_limiter"] = STRATEGIES[app.config["RATELIMIT_STRATEGY"]](storage)

    @property
    def storage(self):
        """The current app's ``limits`` store (``check()`` says whether it answers)."""
        return current_app.extensions["rate_limiter"].storage

    def limit(self, limit_value, key_func):
        """Decorate a view: at most ``limit_value()`` (a limits string) calls per ``key_func()`` value.

        A call over the limit raises ``RateLimited`` (429 ``rate_limited``) with ``Retry-After``:
        whole seconds until the window lets the next call through, at least 1. The
        store's own errors propagate (``limits.errors.StorageError`` with ``wrap_exceptions``).
        """

        def decorator(view):
            scope = f"{view.__module__}.{view.__qualname__}"

            @wraps(view)
            def limited(*args, **kwargs):
                strategy = current_app.extensions["rate_limiter"]
                item, key = parse(limit_value()), key_func()
                if not strategy.hit(item, scope, key):
                    reset_at = strategy.get_window_stats(item, scope, key).reset_time
                    raise RateLimited.retry_after(max(1, math.ceil(reset_at - time.time())))
                return view(*args, **kwargs)

            return limited

        return decorator
