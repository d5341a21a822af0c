"""Configuration errors name the variable and stop the service from starting (CONTRACT "Configuration")."""
import pytest

from app import create_app, engine_options
from app.config import ConfigError, serving_config
from tests.support.config import BASE_CONFIG


@pytest.mark.parametrize("override, name", [
    ({"RATELIMIT_STORAGE_URI": "foo://"}, "RATELIMIT_STORAGE_URI"),
    ({"RATELIMIT_STORAGE_URI": "localhost:6379"}, "RATELIMIT_STORAGE_URI"),
    ({"RATELIMIT_STORAGE_URI": "async+redis://localhost"}, "RATELIMIT_STORAGE_URI"),
    ({"RATELIMIT_STORAGE_URI": "memcached://localhost:11211"}, "RATELIMIT_STORAGE_URI.*pymemcache"),
    ({"AUTH_TOKEN_EXPIRATION": "a week"}, "AUTH_TOKEN_EXPIRATION"),
    ({"AUTH_TOKEN_EXPIRATION": "-1"}, "AUTH_TOKEN_EXPIRATION"),
    ({"PROVIDER_PLANS": "[1, 2]"}, "PROVIDER_PLANS"),
    ({"PROVIDER_PLANS": "{not json"}, "PROVIDER_PLANS"),
    ({"PROVIDER_WEBHOOK_TOLERANCE": "soon"}, "PROVIDER_WEBHOOK_TOLERANCE"),
    ({"FREE_PLAN": " "}, "FREE_PLAN"),
    ({"AUTH_MAX_TOKENS_PER_USER": "0"}, "AUTH_MAX_TOKENS_PER_USER"),
    ({"AUTH_MAX_TOKENS_PER_USER": "many"}, "AUTH_MAX_TOKENS_PER_USER"),
    ({"AUTH_REFRESH_GRACE_SECONDS": "-5"}, "AUTH_REFRESH_GRACE_SECONDS"),
    ({"AUTH_REFRESH_GRACE_SECONDS": "10s"}, "AUTH_REFRESH_GRACE_SECONDS"),
    ({"PROVIDER_TRIAL_DAYS": "two weeks"}, "PROVIDER_TRIAL_DAYS"),
    ({"PROVIDER_TRIAL_DAYS": "-14"}, "PROVIDER_TRIAL_DAYS"),
    ({"PROVIDER_TRIAL_DAYS": "731"}, "PROVIDER_TRIAL_DAYS.*730"),
    ({"SQLALCHEMY_DATABASE_URI": "mysql://app@db/subscriptions"}, "DATABASE_URL.*got mysql://"),
    ({"SQLALCHEMY_DATABASE_URI": "postgresql+psycopg2://app@db/x"}, "DATABASE_URL.*got postgresql\\+psycopg2://"),
    ({"SQLALCHEMY_DATABASE_URI": "garbage"}, "DATABASE_URL.*not a URL"),
])
def test_bad_configuration_names_the_variable(override, name):
    with pytest.raises(ConfigError, match=name):
        create_app({**BASE_CONFIG, **override})


@pytest.mark.parametrize("uri", ["memory://", "redis://127.0.0.1:6379/0", "rediss://h:6380",
                                 "redis+sentinel://h:26379/mymaster"])
def test_rate_limit_storage_schemes_of_limits_are_accepted(uri):
    assert create_app({**BASE_CONFIG, "RATELIMIT_STORAGE_URI": uri}).config["RATELIMIT_STORAGE_URI"] == uri


@pytest.mark.parametrize("secret", [None, "", " , "])
def test_serving_refuses_a_missing_webhook_secret(secret):
    environ = {} if secret is None else {"PROVIDER_WEBHOOK_SECRET": secret}
    with pytest.raises(ConfigError, match="PROVIDER_WEBHOOK_SECRET is not set"):
        serving_config(environ)
    assert serving_config({"PROVIDER_WEBHOOK_SECRET": "whsec_a, whsec_b", "SECRET_KEY": "k"})[
        "PROVIDER_WEBHOOK_SECRET"] == ["whsec_a", "whsec_b"]


@pytest.mark.parametrize("key", [None, "", "  "])
def test_serving_refuses_a_missing_secret_key_in_one_line_naming_it(key):
    environ = {"PROVIDER_WEBHOOK_SECRET": "whsec_a"} | ({} if key is None else {"SECRET_KEY": key})
    with pytest.raises(ConfigError, match="^SECRET_KEY is not set") as raised:
        serving_config(environ)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("name", ["APP_URL_VERIFY_EMAIL", "APP_URL_RESET_PASSWORD"])
def test_an_email_link_without_its_token_placeholder_refuses_to_start(name):
    with pytest.raises(ConfigError, match=f"^{name} must contain {{token}}") as raised:
        create_app({**BASE_CONFIG, name: "https://app.example.com/verify"})
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("override", [{"AUTH_PASSWORD_RESET_RATE_LIMIT": "often"}, {"AUTH_VERIFY_EMAIL_TTL": "0"},
                                      {"AUTH_PASSWORD_RESET_TTL": "an hour"}])
def test_bad_account_settings_are_refused_naming_them(override):
    (name,) = override
    with pytest.raises(ConfigError, match=name):
        create_app({**BASE_CONFIG, **override})


def test_the_app_builds_without_a_webhook_secret(monkeypatch):
    monkeypatch.delenv("PROVIDER_WEBHOOK_SECRET", raising=False)
    config = {k: v for k, v in BASE_CONFIG.items() if k != "PROVIDER_WEBHOOK_SECRET"}
    assert create_app(config).config["PROVIDER_WEBHOOK_SECRET"] == []


def test_environment_is_read(monkeypatch):
    monkeypatch.setenv("PROVIDER_WEBHOOK_SECRET", "whsec_old, whsec_new")
    monkeypatch.setenv("AUTH_TOKEN_EXPIRATION", "60")
    monkeypatch.setenv("PROVIDER_PLANS", '{"price_1": "pro"}')
    monkeypatch.setenv("DATABASE_URL", "sqlite:///:memory:")
    monkeypatch.setenv("AUTH_MAX_TOKENS_PER_USER", "5")
    monkeypatch.setenv("AUTH_REFRESH_GRACE_SECONDS", "30")
    app = create_app({"TESTING": True})
    assert (app.config["AUTH_MAX_TOKENS_PER_USER"], app.config["AUTH_REFRESH_GRACE_SECONDS"]) == (5, 30)
    assert app.config["PROVIDER_WEBHOOK_SECRET"] == ["whsec_old", "whsec_new"]
    assert app.config["AUTH_TOKEN_EXPIRATION"] == 60
    assert app.config["PROVIDER_PLANS"] == {"price_1": "pro"}
    assert app.config["SQLALCHEMY_DATABASE_URI"] == "sqlite:///:memory:"


@pytest.mark.parametrize("given, used", [
    ("postgresql://app:pw@db:5433/subs", "postgresql+psycopg://app:pw@db:5433/subs"),
    ("postgres://app@db/subs", "postgresql+psycopg://app@db/subs"),
    ("postgresql+psycopg://app@db/subs", "postgresql+psycopg://app@db/subs"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
])
def test_a_database_url_without_a_driver_means_psycopg(given, used):
    assert create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": given}).config["SQLALCHEMY_DATABASE_URI"] == used


def test_a_refused_database_url_does_not_show_its_password():
    with pytest.raises(ConfigError) as refused:
        create_app({**BASE_CONFIG, "SQLALCHEMY_DATABASE_URI": "mysql://app:s3cret@db/subscriptions"})
    assert "s3cret" not in str(refused.value)


def test_engine_options_follow_the_database():
    server = engine_options({"SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://db/app"})
    # No ping round trip per checkout: connections are recycled, and checked at checkout locally.
    assert server == {"pool_pre_ping": False, "pool_recycle": 300}
    embedded = engine_options({"SQLALCHEMY_DATABASE_URI": "sqlite:///app.db", "PROVIDER_TIMEOUT": 10,
                               "PROVIDER_MAX_NETWORK_RETRIES": 2})
    # A writer queued behind a lock held across a provider call outlasts the call: 3 attempts, 2 back-offs.
    assert embedded == {"pool_pre_ping": False, "connect_args": {"timeout": 3 * 10 + 2 * 5}}
