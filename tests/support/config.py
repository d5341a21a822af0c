"""The configuration every test app starts from (``make_app`` adds the database, the emulator and the prices)."""
from tests.signing import WEBHOOK_SECRET

BASE_CONFIG = {
    "TESTING": True,
    "PROVIDER_WEBHOOK_SECRET": WEBHOOK_SECRET,
    # Argon2id with small costs keeps the suite fast; production defaults are in app.config.
    "PASSWORD_HASH_TIME_COST": 1,
    "PASSWORD_HASH_MEMORY_COST": 1024,
    # The fixture events' price, and the emulator prices tests create, map to plans.
    "PROVIDER_PLANS": {"price_000000000000000000000000": "pro", "gold21323": "gold"},
    "PROVIDER_API_KEY": "sk_test_emulator",
    "PROVIDER_MAX_NETWORK_RETRIES": 0,
    # The suite opens many accounts and calls Stripe often from one address; the tests of these
    # limits set their own.
    "AUTH_REGISTER_RATE_LIMIT": "100000 per minute",
    "PROVIDER_CALLS_RATE_LIMIT": "100000 per minute",
    # Signs the tokens of the account emails (required under gunicorn, see app.config.require_serving).
    "SECRET_KEY": "test secret key of the account email tokens",
}
