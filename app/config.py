"""Configuration read from the environment (CONTRACT "Configuration"), validated with clear errors."""
import os

from limits import parse

from app.billing.call_costs import MOST_PROVIDER_CALLS
from app.config_sections import (
    check_accounts,
    check_entitlements,
    check_notification_channels,
    check_selling,
    check_usage,
    missing_secret_key,
)
from app.config_values import (
    ConfigError,
    choice,
    database_uri,
    flag,
    int_or_none,
    plans_map,
    rate_limit,
    secrets_list,
    storage_uri,
)


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
    # Selling (CONTRACT "Additions (fourth round)"): see ``check_selling``.
    "PROVIDER_CATALOG_TTL": "300",
    "PROVIDER_AUTOMATIC_TAX": "",
    "CHECKOUT_ALLOWED_HOSTS": "",
    # Organisations (CONTRACT "Additions (fifth round)"): minutes; invitations per organisation.
    "APP_URL_ACCEPT_INVITATION": "http://localhost:3000/invitations/accept?token={token}",
    "ORGANIZATION_INVITATION_TTL": "10080",
    "ORGANIZATION_INVITATION_RATE_LIMIT": "50 per day",
    # Per person, across organisations (CONTRACT "Changes to the fifth round"): invitations sent, organisations made.
    "USER_INVITATION_RATE_LIMIT": "50 per day",
    "ORGANIZATION_CREATE_RATE_LIMIT": "10 per day",
    # Money safety at the edges (CONTRACT "Changes to the fourth round"): see ``check_selling``.
    "PROVIDER_PORTAL_CONFIGURATION": "",
    "PROVIDER_PORTAL_PLAN_CHANGES": "",
    # Usage-based billing (CONTRACT "Additions (fifth round)"): see ``check_usage``.
    "USAGE_DELIVERY_RATE": "500",
    "USAGE_RETENTION_DAYS": "35",
    "USAGE_READY_MAX_AGE": "0",
    # Entitlements (CONTRACT "Additions (sixth round)"): see ``check_entitlements``.
    "PLAN_FEATURES": "{}",
    "ENTITLEMENT_ALERT_THRESHOLDS": "80,100",
}


LIVEMODES = ("live", "test", "any")


# The proration_behavior of a change that costs less (CONTRACT "Changes to the third round"): a
# change that costs money is always invoiced at once, so always_invoice is no choice here.
PRORATIONS = ("create_prorations", "none")


# Limits a limits-library string configures; one that does not parse is refused at start-up.
RATE_LIMITS = ("AUTH_LOGIN_RATE_LIMIT", "AUTH_REGISTER_RATE_LIMIT", "PROVIDER_CALLS_RATE_LIMIT",
               "ORGANIZATION_INVITATION_RATE_LIMIT", "USER_INVITATION_RATE_LIMIT", "ORGANIZATION_CREATE_RATE_LIMIT")


# API key prefixes of Stripe's live mode (secret and restricted keys).
LIVE_KEY_PREFIXES = ("sk_live_", "rk_live_")


# Stripe refuses a longer trial_period_days.
MAX_TRIAL_DAYS = 730


def validate(config):
    """Normalise the raw values in the Flask ``config`` in place; raise ``ConfigError`` naming a bad one."""
    if "SQLALCHEMY_DATABASE_URI" in config:  # absent from serving_config's: create_app sets the default
        config["SQLALCHEMY_DATABASE_URI"] = database_uri(config["SQLALCHEMY_DATABASE_URI"])
    config["AUTH_TOKEN_EXPIRATION"] = int_or_none("AUTH_TOKEN_EXPIRATION", config["AUTH_TOKEN_EXPIRATION"])
    config["AUTH_REMEMBER_ME"] = flag(config["AUTH_REMEMBER_ME"])
    # Optional here: only the webhook endpoint needs it (it answers 503 without), and serving
    # checks it at start-up (``require_serving``); commands such as ``flask db upgrade`` do not.
    config["PROVIDER_WEBHOOK_SECRET"] = secrets_list(config.get("PROVIDER_WEBHOOK_SECRET"))
    config["RATELIMIT_STORAGE_URI"] = storage_uri("RATELIMIT_STORAGE_URI", config["RATELIMIT_STORAGE_URI"])
    config["RATELIMIT_ALLOW_MEMORY"] = flag(config["RATELIMIT_ALLOW_MEMORY"])
    config["PROVIDER_PLANS"] = plans_map("PROVIDER_PLANS", config["PROVIDER_PLANS"])
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
        value = int_or_none(name, config[name])
        if value is None:
            raise ConfigError(f"{name} must be set to a whole number")
        config[name] = value
    config["PROVIDER_LIVEMODE"] = choice("PROVIDER_LIVEMODE", config["PROVIDER_LIVEMODE"] or _livemode_of(config),
                                          LIVEMODES)
    for name in RATE_LIMITS:
        config[name] = rate_limit(name, config[name])
    if parse(config["PROVIDER_CALLS_RATE_LIMIT"]).amount < MOST_PROVIDER_CALLS:
        raise ConfigError(f"PROVIDER_CALLS_RATE_LIMIT must allow at least {MOST_PROVIDER_CALLS} Stripe calls per "
                          f"window (what one subscription intent may make), got {config['PROVIDER_CALLS_RATE_LIMIT']!r}"
                          )
    config["PROVIDER_PRORATION"] = choice("PROVIDER_PRORATION", config["PROVIDER_PRORATION"], PRORATIONS)
    config["METRICS_ENABLED"] = flag(config["METRICS_ENABLED"])
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
    check_notification_channels(config)
    check_accounts(config)
    check_selling(config)
    check_usage(config)
    check_entitlements(config)


def _livemode_of(config):
    """``live`` for a live-mode API key, else ``test``: a test deployment never processes live events."""
    return "live" if str(config.get("PROVIDER_API_KEY") or "").startswith(LIVE_KEY_PREFIXES) else "test"


def missing_webhook_secret():
    """Return the ``ConfigError`` of a service that must verify provider webhooks but has no secret."""
    return ConfigError(
        "PROVIDER_WEBHOOK_SECRET is not set: the service cannot verify provider webhooks without it "
        "(several secrets may be given, comma-separated, while rotating)"
    )


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
