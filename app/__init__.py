"""Application factory: ``create_app(config=None)`` reads as the list of what the service is made of."""
import os
from functools import partial

from flask import Flask
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import configure_mappers
from werkzeug.middleware.proxy_fix import ProxyFix

from app import config as app_config
from app.billing import billing_modes
from app.commands import register_commands
from app.db_pool import server_engine_options
from app.db_session import AUTOCOMMIT_BIND, autocommit_bind
from app.error_handlers import register_errorhandlers
from app.extensions import api, db, limiter
from app.fields import Timestamp
from app.http import register_http
from app.observability import register_observability
from app.request_id import register_request_id

# The Stripe SDK waits at most this long, in seconds, between two attempts of one call.
_PROVIDER_RETRY_DELAY_MAX = 5


def create_app(config=None):
    """Create the Flask app from the environment, overridden by the ``config`` mapping (tests pass theirs).

    Raises ``app.config.ConfigError`` naming the variable when the configuration is unusable.
    """
    app = Flask(__name__, instance_relative_config=True)
    configure(app, config)
    # First, so that every answer carries its id and the HTTP surface's headers, even one refused by
    # a later hook or a view (the rate limiter's 429).
    register_request_id(app)
    register_http(app)
    register_extensions(app)
    register_provider(app)
    register_blueprints(app)
    register_listeners(app)
    register_errorhandlers(app)
    register_observability(app)
    register_commands(app)
    return app


def configure(app, config):
    app.config.from_mapping(app_config.DEFAULTS)
    app.config.from_mapping(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{app.instance_path}/app.db",
        # A fixed window lets a guesser spend the limit twice across a window boundary.
        RATELIMIT_STRATEGY="moving-window",
        API_TITLE="Subscription service",
        API_VERSION="1.0.0",
        OPENAPI_VERSION="3.0.3",
        OPENAPI_URL_PREFIX="/",
        OPENAPI_JSON_PATH="openapi.json",
        API_SPEC_OPTIONS={
            "components": {"securitySchemes": {
                "bearerAuth": {"type": "http", "scheme": "bearer"},
                # METRICS_TOKEN, an operator's setting: no user's token opens /metrics.
                "metricsToken": {"type": "http", "scheme": "bearer"},
                # A service key (``flask create-service-key``): the client app's servers, never a user.
                "serviceKey": {"type": "http", "scheme": "bearer"},
            }},
        },
    )
    app.config.from_mapping(app_config.from_environ())
    app.config.from_mapping(config or {})
    app_config.validate(app.config)
    if "SQLALCHEMY_ENGINE_OPTIONS" not in app.config:
        app.config["SQLALCHEMY_ENGINE_OPTIONS"] = engine_options(app.config)
    uri = app.config["SQLALCHEMY_DATABASE_URI"]
    if not uri.startswith("sqlite"):
        app.config["SQLALCHEMY_BINDS"] = {**app.config.get("SQLALCHEMY_BINDS", {}), AUTOCOMMIT_BIND: autocommit_bind(
            uri, app.config["SQLALCHEMY_ENGINE_OPTIONS"])}
    os.makedirs(app.instance_path, exist_ok=True)
    if app.config["PROXY_FIX_X_FOR"]:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["PROXY_FIX_X_FOR"])


def engine_options(config):
    """Return the SQLAlchemy engine options for the configured database."""
    if not config["SQLALCHEMY_DATABASE_URI"].startswith("sqlite"):
        return server_engine_options()
    # An embedded file has no server to drop a connection, so no pre-ping (it costs a statement
    # per checkout) and no recycling. lock_user holds SQLite's one write lock across provider calls, so a
    # writer queued behind it waits out a whole call, every attempt and back-off, before the
    # lock wait gives up as a 503. pysqlite's ``timeout`` is SQLite's busy timeout, in seconds.
    retries, timeout = config["PROVIDER_MAX_NETWORK_RETRIES"], config["PROVIDER_TIMEOUT"]
    busy = max(5, (retries + 1) * timeout + retries * _PROVIDER_RETRY_DELAY_MAX)
    return {"pool_pre_ping": False, "connect_args": {"timeout": busy}}


def register_extensions(app):
    db.init_app(app)
    limiter.init_app(app)
    api.init_app(app)
    api.register_field(Timestamp, "string", "date-time")


def register_provider(app):
    # Built on first use (``get_provider``): importing the Stripe SDK and requests under it is CPU that a command
    # never calling Stripe (``flask db upgrade``, most of the suite's ``flask`` processes) need not pay.
    app.extensions["subscription_provider_factory"] = partial(stripe_provider, app.config)


def stripe_provider(config):
    """Return a ``StripeProvider`` for the app's ``config``."""
    from app.billing.stripe_provider import StripeProvider

    return StripeProvider(
        api_key=config["PROVIDER_API_KEY"],
        api_base=config["PROVIDER_API_BASE"] or None,
        timeout=config["PROVIDER_TIMEOUT"],
        max_network_retries=config["PROVIDER_MAX_NETWORK_RETRIES"],
        is_classic=billing_modes.is_classic,
    )


def load_for_requests():
    """Load now what the first request would: the Stripe SDK (a provider built and dropped), the mappers' configuration.

    For a gunicorn worker, which then freezes what it loaded out of the collector's reach (``post_worker_init``).
    """
    from app.billing.stripe_provider import StripeProvider

    StripeProvider(api_key=None)
    configure_mappers()


def register_blueprints(app):
    from app import auth, health, organizations, subscription, usage, webhook
    from app.entitlements import views as entitlements
    from app.observability import views as observability
    from app.organizations.access import manager
    from app.subscription.billables import manage_organizations_with

    for feature in (auth, subscription, organizations, usage, entitlements, webhook, health, observability):
        api.register_blueprint(feature.blp)
    manage_organizations_with(app, manager)


def register_listeners(app):
    # Importing connects the module-level receivers to webhook_handled (blinker holds them weakly,
    # so they must live at module level).
    # And quota_consumed's: a metered quota's units go to the usage ledger, thresholds crossed are told.
    from app.entitlements import alerts, metering  # noqa: F401
    from app.listeners import (  # noqa: F401
        admit_seats,
        commit_checkout,
        commit_payment_method,
        commit_plan,
        commit_schedule,
        commit_stripe_features,
        deletions,
        metrics_gauges,
        refresh_catalog,
        send_receipt,
        sync_stripe_features,
    )


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection, connection_record):
    # SQLite ignores foreign keys (and so ON DELETE CASCADE) unless asked on every connection.
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()
