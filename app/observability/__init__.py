"""Eyes on the running service: a log record and metrics for every request (``register_observability``)."""
import logging
import time

from flask import g, request
from sqlalchemy import inspect

from app.observability import metrics
from app.observability.logs import annotate, register_logging

log = logging.getLogger("app.request")

WEBHOOK_ENDPOINT = "webhook.receive"
LOGIN_ENDPOINT = "auth.login"


def _start():
    g.request_started = time.perf_counter()


def _user_id():
    # The identity of the loaded user, read without a query (the session may have been rolled back).
    user = g.get("current_user")
    identity = inspect(user).identity if user is not None else None
    return identity[0] if identity else None


def _webhook_outcome(status):
    if status >= 500:
        return "failed"
    if status >= 400:
        return "rejected"
    return g.get("log_fields", {}).get("webhook_outcome", "processed")


def _seconds():
    return time.perf_counter() - g.get("request_started", time.perf_counter())


def _count(response):
    status = response.status_code
    endpoint = request.url_rule.rule if request.url_rule is not None else "<unmatched>"
    metrics.http_request(request.method, endpoint, status, _seconds())
    if request.endpoint == WEBHOOK_ENDPOINT:
        metrics.webhook_delivery(g.get("log_fields", {}).get("event_type"), _webhook_outcome(status))
    elif request.endpoint == LOGIN_ENDPOINT and status == 429:
        metrics.login_rate_limited()
    return response


def _log(response):
    if log.isEnabledFor(logging.INFO):
        seconds, status = _seconds(), response.status_code
        log.info("%s %s %s %.1f ms", request.method, request.path, status, seconds * 1000, extra={
            "method": request.method, "path": request.path, "status": status,
            "duration_ms": round(seconds * 1000, 1), "user_id": _user_id()})
    return response


def register_observability(app):
    """Configure logging (``LOG_FORMAT``, ``LOG_LEVEL``); log every request, and count it with ``METRICS_ENABLED``.

    Counting is left out when nothing can read the counts: it is the hot path of every request.
    """
    register_logging(app)
    app.before_request(_start)
    app.after_request(_log)
    if app.config["METRICS_ENABLED"]:
        app.after_request(_count)


__all__ = ["annotate", "metrics", "register_observability"]
