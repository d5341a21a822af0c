"""The edge: every ``/v1`` request is checked against the pinned ``stripe`` SDK's own typed parameters
for its operation before any handler runs (as stripe-mock checks Stripe's OpenAPI), so a handler
never checks a parameter's shape by hand and a new route is checked with no new code."""

from .check import check

__all__ = ["check"]
