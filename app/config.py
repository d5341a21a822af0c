"""Configuration read from the environment (CONTRACT "Configuration"), validated with clear errors."""
import base64
import binascii
import json
import os
from email.utils import parseaddr
from urllib.parse import urlsplit

from limits import parse, parse_many
from limits.storage import SCHEMES as _LIMITS_SCHEMES
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError


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


# app.rate_limit drives a synchronous storage, so the async+ variants are refused too.
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


def _livemode_of(config):
    """``live`` for a live-mode API key, else ``test``: a test deployment never processes live events."""
    return "live" if str(config.get("PROVIDER_API_KEY") or "").startswith(LIVE_KEY_PREFIXES) else "test"


def _rate_limit(name, raw):
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


def _database_uri(raw):
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


def _choice(name, raw, choices):
    value = str(raw or "").strip().lower()
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")
    return value


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
    "AUTH_REGISTER_RATE_LIMIT": "20 per hour",
    "AUTH_MAX_TOKENS_PER_USER": "100",
    "AUTH_REFRESH_GRACE_SECONDS": "10",
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
    "RATELIMIT_ALLOW_MEMORY": "",
    "PROXY_FIX_X_FOR": "0",
    "LOG_LEVEL": "INFO",
    "PROVIDER_LIVEMODE": "",
    "RECONCILE_STALE_DAYS": "7",
    "FAILED_EVENT_RETENTION_DAYS": "30",
    "LOG_FORMAT": "text",
    "METRICS_ENABLED": "",
    "METRICS_TOKEN": "",
    "MAIL_SERVER": "",
    "MAIL_PORT": "25",
    "MAIL_USE_TLS": "",
    "MAIL_USE_SSL": "",
    "MAIL_USERNAME": "",
    "MAIL_PASSWORD": "",
    "MAIL_DEFAULT_SENDER": "no-reply@localhost",
    "NOTIFY_WEBHOOK_URL": "",
    "NOTIFY_WEBHOOK_SECRET": "",
    "NOTIFY_MAX_ATTEMPTS": "8",
    "NOTIFY_RETRY_DELAY": "60",
    "PROVIDER_PRORATION": "create_prorations",
    "PROVIDER_TRIAL_DAYS": "0",
    "PROVIDER_CALLS_RATE_LIMIT": "60 per minute",
    "SECRET_KEY": "",
    "APP_URL_VERIFY_EMAIL": "http://localhost:3000/verify-email?token={token}",
    "APP_URL_RESET_PASSWORD": "http://localhost:3000/reset-password?token={token}",
    "AUTH_VERIFY_EMAIL_TTL": "1440",
    "AUTH_PASSWORD_RESET_TTL": "60",
    "AUTH_PASSWORD_RESET_RATE_LIMIT": "5 per hour",
    "AUTH_REQUIRE_VERIFIED_EMAIL": "",
    # Selling (CONTRACT "Additions (fourth round)"): see ``_selling``.
    "PROVIDER_CATALOG_TTL": "300",
    "PROVIDER_AUTOMATIC_TAX": "",
    "CHECKOUT_ALLOWED_HOSTS": "",
    # Organisations (CONTRACT "Additions (fifth round)"): minutes; invitations per organisation.
    "APP_URL_ACCEPT_INVITATION": "http://localhost:3000/invitations/accept?token={token}",
    "ORGANIZATION_INVITATION_TTL": "10080",
    "ORGANIZATION_INVITATION_RATE_LIMIT": "50 per day",
    # Money safety at the edges (CONTRACT "Changes to the fourth round"): see ``_selling``.
    "PROVIDER_PORTAL_CONFIGURATION": "",
    "PROVIDER_PORTAL_PLAN_CHANGES": "",
    # Usage-based billing (CONTRACT "Additions (fifth round)"): see ``_usage``.
    "USAGE_DELIVERY_RATE": "500",
    "USAGE_RETENTION_DAYS": "35",
    "USAGE_READY_MAX_AGE": "0",
}

LIVEMODES = ("live", "test", "any")
# The proration_behavior of a change that costs less (CONTRACT "Changes to the third round"): a
# change that costs money is always invoiced at once, so always_invoice is no choice here.
PRORATIONS = ("create_prorations", "none")
# Limits a limits-library string configures; one that does not parse is refused at start-up.
RATE_LIMITS = ("AUTH_LOGIN_RATE_LIMIT", "AUTH_REGISTER_RATE_LIMIT", "PROVIDER_CALLS_RATE_LIMIT",
               "ORGANIZATION_INVITATION_RATE_LIMIT")
# API key prefixes of Stripe's live mode (secret and restricted keys).
LIVE_KEY_PREFIXES = ("sk_live_", "rk_live_")
# Stripe refuses a longer trial_period_days.
MAX_TRIAL_DAYS = 730


def validate(config):
    """Normalise the raw values in the Flask ``config`` in place; raise ``ConfigError`` naming a bad one."""
    if "SQLALCHEMY_DATABASE_URI" in config:  # absent from serving_config's: create_app sets the default
        config["SQLALCHEMY_DATABASE_URI"] = _database_uri(config["SQLALCHEMY_DATABASE_URI"])
    config["AUTH_TOKEN_EXPIRATION"] = _int_or_none("AUTH_TOKEN_EXPIRATION", config["AUTH_TOKEN_EXPIRATION"])
    config["AUTH_REMEMBER_ME"] = _flag(config["AUTH_REMEMBER_ME"])
    # Optional here: only the webhook endpoint needs it (it answers 503 without), and serving
    # checks it at start-up (``require_serving``); commands such as ``flask db upgrade`` do not.
    config["PROVIDER_WEBHOOK_SECRET"] = _secrets(config.get("PROVIDER_WEBHOOK_SECRET"))
    config["RATELIMIT_STORAGE_URI"] = _storage_uri("RATELIMIT_STORAGE_URI", config["RATELIMIT_STORAGE_URI"])
    config["RATELIMIT_ALLOW_MEMORY"] = _flag(config["RATELIMIT_ALLOW_MEMORY"])
    config["PROVIDER_PLANS"] = _plans("PROVIDER_PLANS", config["PROVIDER_PLANS"])
    for name in (
        "PROVIDER_WEBHOOK_TOLERANCE",
        "PROVIDER_TIMEOUT",
        "PROVIDER_MAX_NETWORK_RETRIES",
        "PASSWORD_HASH_TIME_COST",
        "PASSWORD_HASH_MEMORY_COST",
        "MAX_CONTENT_LENGTH",
        "PROXY_FIX_X_FOR",
        "RECONCILE_STALE_DAYS",
        "FAILED_EVENT_RETENTION_DAYS",
        "AUTH_MAX_TOKENS_PER_USER",
        "AUTH_REFRESH_GRACE_SECONDS",
        "MAIL_PORT",
        "NOTIFY_MAX_ATTEMPTS",
        "NOTIFY_RETRY_DELAY",
        "PROVIDER_TRIAL_DAYS",
        "AUTH_VERIFY_EMAIL_TTL",
        "AUTH_PASSWORD_RESET_TTL",
        "ORGANIZATION_INVITATION_TTL",
        "USAGE_DELIVERY_RATE",
        "USAGE_RETENTION_DAYS",
        "USAGE_READY_MAX_AGE",
    ):
        value = _int_or_none(name, config[name])
        if value is None:
            raise ConfigError(f"{name} must be set to a whole number")
        config[name] = value
    config["PROVIDER_LIVEMODE"] = _choice("PROVIDER_LIVEMODE", config["PROVIDER_LIVEMODE"] or _livemode_of(config),
                                          LIVEMODES)
    for name in RATE_LIMITS:
        config[name] = _rate_limit(name, config[name])
    config["PROVIDER_PRORATION"] = _choice("PROVIDER_PRORATION", config["PROVIDER_PRORATION"], PRORATIONS)
    config["METRICS_ENABLED"] = _flag(config["METRICS_ENABLED"])
    config["LOG_FORMAT"] = str(config["LOG_FORMAT"]).strip().lower()
    if config["LOG_FORMAT"] not in ("text", "json"):
        raise ConfigError(f"LOG_FORMAT must be text or json, got {config['LOG_FORMAT']!r}")
    if config["PROVIDER_TRIAL_DAYS"] > MAX_TRIAL_DAYS:
        raise ConfigError(f"PROVIDER_TRIAL_DAYS must be at most {MAX_TRIAL_DAYS} (Stripe's longest trial), "
                          f"got {config['PROVIDER_TRIAL_DAYS']}")
    if config["AUTH_MAX_TOKENS_PER_USER"] < 1:
        raise ConfigError("AUTH_MAX_TOKENS_PER_USER must be at least 1: a user needs a token to log in")
    if not str(config.get("FREE_PLAN") or "").strip():
        raise ConfigError("FREE_PLAN must name the plan of a user with no valid subscription")
    _notification_channels(config)
    _accounts(config)
    _selling(config)
    _usage(config)


# Stripe takes a meter event up to 35 days after its timestamp: an identifier kept less long could
# be received, and billed, twice (https://docs.stripe.com/api/billing/meter-event/create).
MIN_USAGE_RETENTION_DAYS = 35


def _usage(config):
    """Check the usage settings: a positive delivery rate, identifiers kept at least 35 days."""
    if config["USAGE_DELIVERY_RATE"] < 1:
        raise ConfigError("USAGE_DELIVERY_RATE must be at least 1 (meter events per second)")
    if config["USAGE_RETENTION_DAYS"] < MIN_USAGE_RETENTION_DAYS:
        raise ConfigError(f"USAGE_RETENTION_DAYS must be at least {MIN_USAGE_RETENTION_DAYS}: an identifier "
                          "kept less long than Stripe's 35-day window could be billed twice")
    if config["USAGE_READY_MAX_AGE"] < 0:
        raise ConfigError("USAGE_READY_MAX_AGE must be 0 (no readiness check) or a number of seconds")


def _accounts(config):
    """Check the settings of the account emails (CONTRACT "Accounts: verification, recovery, profile, deletion")."""
    config["SECRET_KEY"] = str(config.get("SECRET_KEY") or "").strip()
    config["AUTH_REQUIRE_VERIFIED_EMAIL"] = _flag(config["AUTH_REQUIRE_VERIFIED_EMAIL"])
    for name in ("APP_URL_VERIFY_EMAIL", "APP_URL_RESET_PASSWORD", "APP_URL_ACCEPT_INVITATION"):
        url = str(config[name] or "").strip()
        # The link in the email is this URL with {token} replaced: without it the email carries no token.
        if "{token}" not in url:
            raise ConfigError(f"{name} must contain {{token}}, where the emailed link carries its token, got {url!r}")
        config[name] = url
    for name in ("AUTH_VERIFY_EMAIL_TTL", "AUTH_PASSWORD_RESET_TTL", "ORGANIZATION_INVITATION_TTL"):
        if config[name] < 1:
            raise ConfigError(f"{name} must be at least 1 (minutes)")
    try:
        parse_many(str(config["AUTH_PASSWORD_RESET_RATE_LIMIT"]))
    except ValueError:
        raise ConfigError("AUTH_PASSWORD_RESET_RATE_LIMIT must be a rate limit such as '5 per hour', "
                          f"got {config['AUTH_PASSWORD_RESET_RATE_LIMIT']!r}") from None


def missing_secret_key():
    """Return the ``ConfigError`` of a server or worker that must sign email tokens but has no key."""
    return ConfigError("SECRET_KEY is not set: the service signs the tokens of its verification and password "
                       "reset emails with it (any long random string, e.g. python -c 'import secrets; "
                       "print(secrets.token_urlsafe(32))')")


def _selling(config):
    """``PROVIDER_CATALOG_TTL`` (seconds, >= 0), ``PROVIDER_AUTOMATIC_TAX`` (a flag),
    ``CHECKOUT_ALLOWED_HOSTS`` (a frozenset of lower-case host names; default: the hosts of ``APP_URL_*``),
    ``PROVIDER_PORTAL_CONFIGURATION`` (a ``bpc_`` id or ``None``) and ``PROVIDER_PORTAL_PLAN_CHANGES`` (a flag)."""
    ttl = _int_or_none("PROVIDER_CATALOG_TTL", config["PROVIDER_CATALOG_TTL"])
    if ttl is None:
        raise ConfigError("PROVIDER_CATALOG_TTL must be set to a whole number of seconds")
    config["PROVIDER_CATALOG_TTL"] = ttl
    config["PROVIDER_AUTOMATIC_TAX"] = _flag(config["PROVIDER_AUTOMATIC_TAX"])
    raw = config["CHECKOUT_ALLOWED_HOSTS"]
    if isinstance(raw, str):
        hosts = [host.strip() for host in raw.split(",") if host.strip()]
    else:
        hosts = list(raw)
    if not hosts:
        urls = [config["APP_URL_VERIFY_EMAIL"], config["APP_URL_RESET_PASSWORD"]]
        hosts = [urlsplit(url).hostname for url in urls if urlsplit(str(url)).hostname]
    config["CHECKOUT_ALLOWED_HOSTS"] = frozenset(str(host).lower() for host in hosts)
    pinned = str(config["PROVIDER_PORTAL_CONFIGURATION"] or "").strip()
    if pinned and not pinned.startswith("bpc_"):
        raise ConfigError(f"PROVIDER_PORTAL_CONFIGURATION must be a billing portal configuration id (bpc_...), "
                          f"got {pinned!r}")
    config["PROVIDER_PORTAL_CONFIGURATION"] = pinned or None
    config["PROVIDER_PORTAL_PLAN_CHANGES"] = _flag(config["PROVIDER_PORTAL_PLAN_CHANGES"])


def require_serving(config):
    """Raise ``ConfigError`` unless the validated ``config`` can serve HTTP: webhooks need a secret,
    email tokens a ``SECRET_KEY``."""
    if not config["PROVIDER_WEBHOOK_SECRET"]:
        raise missing_webhook_secret()
    if not config["SECRET_KEY"]:
        raise missing_secret_key()


def serving_config(environ=None):
    """Return the validated settings of ``environ`` for a server about to start; raise ``ConfigError``.

    What ``create_app`` reads and checks, without building an app: gunicorn's master calls it
    before forking workers (``gunicorn.conf.py``).
    """
    config = {**DEFAULTS, **from_environ(environ)}
    validate(config)
    require_serving(config)
    return config


def _webhook_secret(raw):
    # Standard Webhooks: "whsec_" + base64 of a 24 to 64 byte key.
    try:
        key = base64.b64decode(raw.removeprefix("whsec_"), validate=True)
    except (binascii.Error, ValueError):
        key = b""
    if not raw.startswith("whsec_") or not 24 <= len(key) <= 64:
        raise ConfigError("NOTIFY_WEBHOOK_SECRET must be whsec_ followed by the base64 of a 24 to 64 byte key "
                          "(Standard Webhooks)")
    return raw


def _notification_channels(config):
    """Check the email and app-webhook channel settings (CONTRACT "Additions": configuration)."""
    for name in ("MAIL_USE_TLS", "MAIL_USE_SSL"):
        config[name] = _flag(config[name])
    if config["MAIL_USE_TLS"] and config["MAIL_USE_SSL"]:
        raise ConfigError("MAIL_USE_TLS (STARTTLS) and MAIL_USE_SSL (implicit TLS) exclude each other: set one")
    if not 0 < config["MAIL_PORT"] < 65536:
        raise ConfigError(f"MAIL_PORT must be a TCP port (1-65535), got {config['MAIL_PORT']}")
    server = str(config["MAIL_SERVER"] or "").strip()
    if server and (":" in server or "/" in server or " " in server):
        raise ConfigError(f"MAIL_SERVER must be a host name or address (the port goes in MAIL_PORT), got {server!r}")
    config["MAIL_SERVER"] = server
    if "@" not in parseaddr(str(config["MAIL_DEFAULT_SENDER"]))[1]:
        raise ConfigError(f"MAIL_DEFAULT_SENDER must be an email address, got {config['MAIL_DEFAULT_SENDER']!r}")
    if config["NOTIFY_MAX_ATTEMPTS"] < 1 or config["NOTIFY_RETRY_DELAY"] < 1:
        raise ConfigError("NOTIFY_MAX_ATTEMPTS and NOTIFY_RETRY_DELAY must be at least 1")
    _webhook_channel(config)


def _webhook_channel(config):
    url = str(config["NOTIFY_WEBHOOK_URL"] or "").strip()
    config["NOTIFY_WEBHOOK_URL"] = url
    if not url:
        return
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
        valid = parts.scheme in {"http", "https"} and bool(parts.hostname)
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(f"NOTIFY_WEBHOOK_URL must be an http:// or https:// URL with a host, got {url!r}")
    secret = str(config["NOTIFY_WEBHOOK_SECRET"] or "").strip()
    if not secret:
        raise ConfigError("NOTIFY_WEBHOOK_SECRET is not set: it is required when NOTIFY_WEBHOOK_URL is set")
    config["NOTIFY_WEBHOOK_SECRET"] = _webhook_secret(secret)
