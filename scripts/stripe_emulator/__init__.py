"""A small stateful Stripe API emulator for offline development and tests.

Start it with ``python -m scripts.stripe_emulator`` or, in tests, with
:func:`scripts.stripe_emulator.testing.run_emulator`. See README.md.
"""

from .app import create_app

__all__ = ["create_app"]
