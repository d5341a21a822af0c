"""Stripe's value rules that hold for every operation, checked after the types (``check.py``).

The SDK's types say a value is a string, an integer or a hash; Stripe's API also bounds some of them,
whatever the operation. Each rule names the Stripe document it follows:

- ``metadata`` (any hash of that name, at any depth): at most 50 keys, keys at most 40 characters,
  values at most 500 (https://docs.stripe.com/api/metadata), refused in the words Stripe uses
  (https://github.com/stripe/stripe-php/issues/246).
- ``expand``: at most four levels per path, "You cannot expand more than 4 levels of a property."
  (https://docs.stripe.com/api/expanding_objects: "Expansions have a maximum depth of four levels").
- ``quantity`` and ``trial_period_days`` (at any depth): non-negative integers, as Stripe's OpenAPI
  bounds them ("This value must be greater than or equal to 0.", code ``parameter_invalid_integer``;
  https://github.com/stripe/openapi/issues/93 shows the answer for ``line_items[][quantity]``).
- strings: ``email`` at most 512 characters, every other string at most 5000 (Stripe's OpenAPI
  ``maxLength``; https://docs.stripe.com/api/customers/create#create_customer-email).
"""

from __future__ import annotations

from typing import Any

from ..core.store import StripeError

METADATA_KEYS_MAX = 50
METADATA_KEY_LENGTH_MAX = 40
METADATA_VALUE_LENGTH_MAX = 500
EXPAND_LEVELS_MAX = 4
STRING_LENGTH_MAX = 5000
EMAIL_LENGTH_MAX = 512
NON_NEGATIVE = frozenset({"quantity", "trial_period_days"})


def check_rules(params: dict) -> None:
    """Raises Stripe's 400 for the first value of ``params`` (already typed) a rule above refuses."""
    _walk(params, [])


def _name(path: list) -> str:
    return str(path[0]) + "".join(f"[{part}]" for part in path[1:]) if path else ""


def _walk(node: Any, path: list) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            here = [*path, key]
            if key == "metadata" and isinstance(value, dict):
                _metadata(value, _name(here))
            elif key == "expand" and isinstance(value, list):
                _expand(value, _name(here))
            else:
                _value(key, value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk(value, [*path, i])


def _value(key: Any, value: Any, path: list) -> None:
    if isinstance(value, (dict, list)):
        _walk(value, path)
    elif key in NON_NEGATIVE and isinstance(value, int) and value < 0:
        raise StripeError(400, "This value must be greater than or equal to 0.",
                          code="parameter_invalid_integer", param=_name(path))
    elif isinstance(value, str):
        limit = EMAIL_LENGTH_MAX if key == "email" else STRING_LENGTH_MAX
        if len(value) > limit:
            raise StripeError(400, f"Invalid string: {value[:20]}...; must be at most {limit} characters",
                              param=_name(path))


def _metadata(metadata: dict, name: str) -> None:
    if len(metadata) > METADATA_KEYS_MAX:
        raise StripeError(400, f"Invalid {name}: you can specify up to {METADATA_KEYS_MAX} keys, "
                          f"but {len(metadata)} were given", param=name)
    for key, value in metadata.items():
        if len(key) > METADATA_KEY_LENGTH_MAX:
            raise StripeError(400, f"Invalid key: {key} must be a string under "
                              f"{METADATA_KEY_LENGTH_MAX} characters", param=name)
        if isinstance(value, str) and len(value) > METADATA_VALUE_LENGTH_MAX:
            raise StripeError(400, f"Invalid val: {value[:20]}... must be a string under "
                              f"{METADATA_VALUE_LENGTH_MAX} characters", param=name)


def _expand(paths: list, name: str) -> None:
    for path in paths:
        if isinstance(path, str) and len(path.split(".")) > EXPAND_LEVELS_MAX:
            raise StripeError(400, f"You cannot expand more than {EXPAND_LEVELS_MAX} levels of a property.",
                              param=name)
