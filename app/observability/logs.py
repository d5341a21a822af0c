"""Log output: plain text by default, one JSON object per line with ``LOG_FORMAT=json``.

Every record of the ``app`` loggers carries the request id and the fields a request has
``annotate``-d (the webhook's event id and type); one ``app.request`` record per request adds method,
path, status, duration and the user. Nothing here logs a header, a body or a query string, which is
where tokens, passwords and signatures travel.
"""
import logging
import sys

from flask import g, has_request_context
from gunicorn.glogging import Logger as GunicornLogger
from pythonjsonlogger.json import JsonFormatter

TEXT_FORMAT = "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"
# The JSON records' first fields, in the logging attributes' names, and the names they are given.
JSON_FIELDS = "{levelname}{name}{process}{message}"
JSON_RENAMED = {"levelname": "level", "name": "logger", "process": "pid"}


def annotate(**fields):
    """Add ``fields`` to every later log record of the current request (no-op outside a request)."""
    if has_request_context():
        g.setdefault("log_fields", {}).update(fields)


class RequestContextFilter(logging.Filter):
    """Adds ``request_id`` (``-`` outside a request) and the request's annotated fields to records."""

    def filter(self, record):
        if has_request_context():
            record.request_id = g.get("request_id", "-")
            for name, value in g.get("log_fields", {}).items():
                setattr(record, name, value)
        else:
            record.request_id = "-"
        return True


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (a test's capture, a redirect), like ``lastResort``."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):
        """``StreamHandler.__init__`` assigns one; the property always answers the current stderr."""


def json_formatter():
    """Return the JSON formatter: ``time`` (ISO 8601 UTC), ``level``, ``logger``, ``message``, ``pid``,
    ``request_id``, then any extra fields of the record."""
    return JsonFormatter(JSON_FIELDS + "{request_id}", style="{", timestamp="time", rename_fields=JSON_RENAMED)


def formatter_for(log_format):
    """Return the formatter of ``LOG_FORMAT`` (``text`` or ``json``)."""
    return json_formatter() if log_format == "json" else logging.Formatter(TEXT_FORMAT)


def register_logging(app):
    """Send the ``app`` loggers to stderr in ``LOG_FORMAT`` at ``LOG_LEVEL`` (one handler per process)."""
    root = logging.getLogger("app")
    handler = next((h for h in root.handlers if isinstance(h, StderrHandler)), None)
    if handler is None:
        handler = StderrHandler()
        handler.addFilter(RequestContextFilter())
        root.addHandler(handler)
    handler.setFormatter(formatter_for(app.config["LOG_FORMAT"]))
    root.setLevel(app.config["LOG_LEVEL"])


class GunicornJsonFormatter(JsonFormatter):
    """gunicorn's error and access logs as JSON; an access record gets the ``app.request`` field names.

    gunicorn passes its access "atoms" as the record's ``args``; the path is without its query string.
    """

    ACCESS_FIELDS = {"method": "m", "path": "U", "status": "s", "duration_ms": "M", "bytes": "B",
                     "remote_addr": "h", "user_agent": "a", "request_id": "{x-request-id}o"}

    def __init__(self):
        super().__init__(JSON_FIELDS, style="{", timestamp="time", rename_fields=JSON_RENAMED)

    def add_fields(self, log_data, record, message_dict):
        super().add_fields(log_data, record, message_dict)
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            log_data["message"] = "request"
            for field, atom in self.ACCESS_FIELDS.items():
                log_data[field] = record.args.get(atom, "-")
            for field in ("status", "duration_ms", "bytes"):
                if str(log_data[field]).isdigit():
                    log_data[field] = int(log_data[field])


class GunicornJsonLogger(GunicornLogger):
    """gunicorn's logger class with every handler it sets up (error and access log) writing JSON."""

    def setup(self, cfg):
        super().setup(cfg)
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(GunicornJsonFormatter())
