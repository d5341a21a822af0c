"""Stripe webhook signatures for the tests and the webhook bench.

It imports no pytest fixtures, so scripts can use it without loading the tests' conftest.
"""
import hashlib
import hmac
import time

# The tests' apps are configured with it (``tests.conftest.BASE_CONFIG``).
WEBHOOK_SECRET = "whsec_test_secret"


def sign(payload, secret=WEBHOOK_SECRET, timestamp=None):
    """Return a ``Stripe-Signature`` header for ``payload`` (bytes), as Stripe computes it."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"
