"""The checks of the configuration by feature: notification channels, account emails, selling, usage.
Each normalises its settings in the Flask ``config`` in place; ``app.config.validate`` calls them."""
from email.utils import parseaddr
from urllib.parse import urlsplit

from limits import parse_many

from app.config_values import ConfigError, flag, int_or_none, webhook_secret
from app.entitlements.plan_features import alert_thresholds, plan_features

# Stripe takes a meter event up to 35 days after its timestamp: an identifier kept less long could
# be received, and billed, twice (https://docs.stripe.com/api/billing/meter-event/create).
MIN_USAGE_RETENTION_DAYS = 35


def check_usage(config):
    """Check the usage settings: a positive delivery rate, identifiers kept at least 35 days."""
    if config["USAGE_DELIVERY_RATE"] < 1:
        raise ConfigError("USAGE_DELIVERY_RATE must be at least 1 (meter events per second)")
    if config["USAGE_RETENTION_DAYS"] < MIN_USAGE_RETENTION_DAYS:
        raise ConfigError(f"USAGE_RETENTION_DAYS must be at least {MIN_USAGE_RETENTION_DAYS}: an identifier "
                          "kept less long than Stripe's 35-day window could be billed twice")
    if config["USAGE_READY_MAX_AGE"] < 0:
        raise ConfigError("USAGE_READY_MAX_AGE must be 0 (no readiness check) or a number of seconds")


def check_entitlements(config):
    """``PLAN_FEATURES`` (``{plan: {feature: spec}}``, plans of ``PROVIDER_PLANS`` or ``FREE_PLAN``) and
    ``ENTITLEMENT_ALERT_THRESHOLDS`` (a sorted tuple of percentages); after ``PROVIDER_PLANS`` and ``FREE_PLAN``."""
    plans = {*config["PROVIDER_PLANS"].values(), str(config["FREE_PLAN"]).strip()}
    config["PLAN_FEATURES"] = plan_features(config["PLAN_FEATURES"], plans)
    config["ENTITLEMENT_ALERT_THRESHOLDS"] = alert_thresholds(config["ENTITLEMENT_ALERT_THRESHOLDS"])


def check_accounts(config):
    """Check the settings of the account emails (CONTRACT "Accounts: verification, recovery, profile, deletion")."""
    config["SECRET_KEY"] = str(config.get("SECRET_KEY") or "").strip()
    config["AUTH_REQUIRE_VERIFIED_EMAIL"] = flag(config["AUTH_REQUIRE_VERIFIED_EMAIL"])
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


def check_selling(config):
    """``PROVIDER_CATALOG_TTL`` (seconds, >= 0), ``PROVIDER_AUTOMATIC_TAX`` (a flag),
    ``CHECKOUT_ALLOWED_HOSTS`` (a frozenset of lower-case host names; default: the hosts of ``APP_URL_*``),
    ``PROVIDER_PORTAL_CONFIGURATION`` (a ``bpc_`` id or ``None``) and ``PROVIDER_PORTAL_PLAN_CHANGES`` (a flag)."""
    ttl = int_or_none("PROVIDER_CATALOG_TTL", config["PROVIDER_CATALOG_TTL"])
    if ttl is None:
        raise ConfigError("PROVIDER_CATALOG_TTL must be set to a whole number of seconds")
    config["PROVIDER_CATALOG_TTL"] = ttl
    config["PROVIDER_AUTOMATIC_TAX"] = flag(config["PROVIDER_AUTOMATIC_TAX"])
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
    config["PROVIDER_PORTAL_PLAN_CHANGES"] = flag(config["PROVIDER_PORTAL_PLAN_CHANGES"])


def check_notification_channels(config):
    """Check the email and app-webhook channel settings (CONTRACT "Additions": configuration)."""
    for name in ("MAIL_USE_TLS", "MAIL_USE_SSL"):
        config[name] = flag(config[name])
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
    config["NOTIFY_WEBHOOK_SECRET"] = webhook_secret(secret)
