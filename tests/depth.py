"""How hard the generated-input tests try: a bounded budget under ``make test``, a larger one under ``make test-deep``.

``make test-deep`` sets ``TEST_DEEP=1``; CI runs both, so every submission still gets the larger budget.
"""
import os

DEEP = os.environ.get("TEST_DEEP") == "1"


def budget(quick, deep):
    """Return ``deep`` under ``make test-deep``, else ``quick`` (a number of examples, or a switch)."""
    return deep if DEEP else quick
