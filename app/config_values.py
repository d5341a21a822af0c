"""The value parsers of the configuration: a whole number, a flag, a list of secrets, a storage URI,
the plan map, a rate limit, a database URL, a choice; each raises ``ConfigError`` naming the variable."""
import base64
import binascii
import json

from limits import parse
from limits.storage import SCHEMES as _LIMITS_SCHEMES
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


class ConfigError(RuntimeError):
    """A configuration value is missing or malformed; the message names the variable."""


def int_or_none(name, raw):
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative, got {value}")
    return value


def flag(raw):
    return str(raw).strip().lower() in {"1", "true", "yes", "on"}


def secrets_list(raw):
    if isinstance(raw, (list, tuple)):
        values = [str(v).strip() for v in raw]
    else:
        values = [part.strip() for part in str(raw or "").split(",")]
    return [v for v in values if v]


# app.rate_limit drives a synchronous storage, so the async+ variants are refused too.
RATELIMIT_SCHEMES = sorted(scheme for scheme in _LIMITS_SCHEMES if not scheme.startswith("async+"))


def storage_uri(name, raw):
    uri = str(raw or "").strip()
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    if scheme not in RATELIMIT_SCHEMES:
        raise ConfigError(f"{name} must be a storage URI of the limits library ({', '.join(RATELIMIT_SCHEMES)}), "
                          f"e.g. memory:// or redis://host:6379, got {uri!r}")
    return uri


def plans_map(name, raw):
    if isinstance(raw, dict):
        plans = raw
    else:
        try:
            plans = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{name} must be a JSON object of price id -> plan name: {exc}") from None
    if not isinstance(plans, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in plans.items()
    ):
        raise ConfigError(f'{name} must be a JSON object of price id -> plan name, e.g. {{"price_123": "pro"}}')
    return plans


def rate_limit(name, raw):
    try:
        parse(str(raw))
    except ValueError:
        raise ConfigError(f'{name} must be a rate limit such as "60 per minute", got {raw!r}') from None
    return str(raw)


# The databases the service runs on, by SQLAlchemy driver name: its SQL speaks these two dialects, and
# setup.cfg installs psycopg (3) for PostgreSQL. A URL without a driver, as hosting platforms hand
# them out (``postgresql://``, Heroku's ``postgres://``), means psycopg rather than SQLAlchemy's
# default psycopg2, which is not installed.
DATABASE_DRIVERS = {"sqlite": "sqlite", "sqlite+pysqlite": "sqlite+pysqlite", "postgresql": "postgresql+psycopg",
                    "postgres": "postgresql+psycopg", "postgresql+psycopg": "postgresql+psycopg"}


def database_uri(raw):
    """Return ``DATABASE_URL`` with its driver named; raise ``ConfigError`` for another database or a non-URL."""
    uri = str(raw or "").strip()
    usage = "DATABASE_URL must be a postgresql:// (psycopg) or sqlite:/// URL, e.g. postgresql://app@db/subscriptions"
    try:
        url = make_url(uri)
    except ArgumentError:
        # Not echoed: a mistyped URL may still hold a password.
        raise ConfigError(f"{usage}; got something that is not a URL") from None
    driver = DATABASE_DRIVERS.get(url.drivername)
    if driver is None:
        raise ConfigError(f"{usage}; got {url.drivername}://")
    return uri if driver == url.drivername else url.set(drivername=driver).render_as_string(hide_password=False)


def choice(name, raw, choices):
    value = str(raw or "").strip().lower()
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


def webhook_secret(raw):
    # Standard Webhooks: "whsec_" + base64 of a 24 to 64 byte key.
    try:
        key = base64.b64decode(raw.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not raw.startswith("whsec_") or not 24 <= len(key) <= 64:
        raise ConfigError("NOTIFY_WEBHOOK_SECRET must be whsec_ followed by the base64 of a 24 to 64 byte key "
                          "(Standard Webhooks)")
    return raw
