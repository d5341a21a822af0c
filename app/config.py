"""Configuration read from the environment (CONTRACT "Configuration"), validated with clear errors."""
import json
import os

from limits.storage import SCHEMES as _LIMITS_SCHEMES


class ConfigError(RuntimeError):
    """A configuration value is missing or malformed; the message names the variable."""


def _int_or_none(name, raw):
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None
    if value < 0:
        raise ConfigError(f"{name} must not be negative, got {value}")
    return value


def _flag(raw):
    return str(raw).strip().lower() in {"1", "true", "yes", "on"}


def _secrets(raw):
    if isinstance(raw, (list, tuple)):
        values = [str(v).strip() for v in raw]
    else:
        values = [part.strip() for part in str(raw or "").split(",")]
    return [v for v in values if v]


def missing_webhook_secret():
    """Return the ``ConfigError`` of a service that must verify provider webhooks but has no secret."""
    return ConfigError(
        "PROVIDER_WEBHOOK_SECRET is not set: the service cannot verify provider webhooks without it "
        "(several secrets may be given, comma-separated, while rotating)"
    )


# Flask-Limiter drives a synchronous storage, so the async+ variants are refused too.
RATELIMIT_SCHEMES = sorted(scheme for scheme in _LIMITS_SCHEMES if not scheme.startswith("async+"))


def _storage_uri(name, raw):
    uri = str(raw or "").strip()
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    if scheme not in RATELIMIT_SCHEMES:
        raise ConfigError(f"{name} must be a storage URI of the limits library ({', '.join(RATELIMIT_SCHEMES)}), "
                          f"e.g. memory:// or redis://host:6379, got {uri!r}")
    return uri


def _plans(name, raw):
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


def from_environ(environ=None):
    """Return the settings found in ``environ`` (default ``os.environ``) as a dict of raw values.

    Only names that are present are returned, so defaults stay in ``DEFAULTS`` and a test's own
    config mapping can override any of them.
    """
    environ = os.environ if environ is None else environ
    names = set(DEFAULTS) | {"DATABASE_URL", "PROVIDER_WEBHOOK_SECRET", "PROVIDER_API_KEY", "PROVIDER_API_BASE"}
    found = {name: environ[name] for name in names if name in environ}
    if "DATABASE_URL" in found:
        found["SQLALCHEMY_DATABASE_URI"] = found.pop("DATABASE_URL")
    return found


DEFAULTS = {
    "AUTH_TOKEN_EXPIRATION": "10080",
    "AUTH_REMEMBER_ME": "",
    "AUTH_TOKEN_PREFIX": "",
    "AUTH_LOGIN_RATE_LIMIT": "10 per minute",
    "PASSWORD_HASH_TIME_COST": "3",
    "PASSWORD_HASH_MEMORY_COST": "65536",
    "PROVIDER_API_KEY": "",
    "PROVIDER_API_BASE": "",
    "PROVIDER_WEBHOOK_TOLERANCE": "300",
    "PROVIDER_TIMEOUT": "5",
    "PROVIDER_MAX_NETWORK_RETRIES": "1",
    "PROVIDER_PLANS": "{}",
    "FREE_PLAN": "free",
    "MAX_CONTENT_LENGTH": str(1024 * 1024),
    "RATELIMIT_STORAGE_URI": "memory://",
    "PROXY_FIX_X_FOR": "0",
    "LOG_LEVEL": "INFO",
}


def validate(config):
    """Normalise the raw values in the Flask ``config`` in place; raise ``ConfigError`` naming a bad one."""
    config["AUTH_TOKEN_EXPIRATION"] = _int_or_none("AUTH_TOKEN_EXPIRATION", config["AUTH_TOKEN_EXPIRATION"])
    config["AUTH_REMEMBER_ME"] = _flag(config["AUTH_REMEMBER_ME"])
    # Optional here: only the webhook endpoint needs it (it answers 503 without), and serving
    # checks it at start-up (``require_serving``); commands such as ``flask db upgrade`` do not.
    config["PROVIDER_WEBHOOK_SECRET"] = _secrets(config.get("PROVIDER_WEBHOOK_SECRET"))
    config["RATELIMIT_STORAGE_URI"] = _storage_uri("RATELIMIT_STORAGE_URI", config["RATELIMIT_STORAGE_URI"])
    config["PROVIDER_PLANS"] = _plans("PROVIDER_PLANS", config["PROVIDER_PLANS"])
    for name in (
        "PROVIDER_WEBHOOK_TOLERANCE",
        "PROVIDER_TIMEOUT",
        "PROVIDER_MAX_NETWORK_RETRIES",
        "PASSWORD_HASH_TIME_COST",
        "PASSWORD_HASH_MEMORY_COST",
        "MAX_CONTENT_LENGTH",
        "PROXY_FIX_X_FOR",
    ):
        value = _int_or_none(name, config[name])
        if value is None:
            raise ConfigError(f"{name} must be set to a whole number")
        config[name] = value
    if not str(config.get("FREE_PLAN") or "").strip():
        raise ConfigError("FREE_PLAN must name the plan of a user with no valid subscription")


def require_serving(config):
    """Raise ``ConfigError`` unless the validated ``config`` can serve HTTP: webhooks need a secret."""
    if not config["PROVIDER_WEBHOOK_SECRET"]:
        raise missing_webhook_secret()


def serving_config(environ=None):
    """Return the validated settings of ``environ`` for a server about to start; raise ``ConfigError``.

    What ``create_app`` reads and checks, without building an app: gunicorn's master calls it
    before forking workers (``gunicorn.conf.py``).
    """
    config = {**DEFAULTS, **from_environ(environ)}
    validate(config)
    require_serving(config)
    return config
