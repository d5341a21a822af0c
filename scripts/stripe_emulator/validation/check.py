"""Check a request's decoded parameters against its operation's SDK params type; refuse as Stripe does.

pydantic (a ``TypeAdapter`` over the strict TypedDicts of ``types.py``) does the checking; its first
error, in the order below, becomes Stripe's ``invalid_request_error`` naming the full parameter
(``payment_settings[foo]``, ``items[0][quantity]``).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..core.store import StripeError
from .operations import params_type
from .rules import check_rules
from .supported import check_supported
from .types import strict_typeddict

# Which of several errors Stripe reports first: an unknown or missing parameter before a bad value.
_PRIORITY = ("extra_forbidden", "missing", "parameter_invalid_empty", "parameter_invalid_integer",
             "parameter_invalid_boolean", "literal_error")


@functools.cache
def _adapter(td: type) -> TypeAdapter:
    return TypeAdapter(strict_typeddict(td))


def check(method: str, rule: str, params: dict) -> dict:
    """``params`` read as the operation at ``rule`` types them (``"12"`` -> 12, ``"true"`` -> True).

    Raises Stripe's 400 for the first parameter the operation refuses, by type or by one of the
    rules every operation keeps (``rules.py``: metadata, expand depth, lengths), or as a parameter the
    emulator does not apply (``supported.py``: 400 ``parameter_unsupported``). Every ``/v1`` route the
    emulator answers is an SDK operation (a test checks it).
    """
    td = params_type(method, rule)
    if td is None:
        raise StripeError(404, f"Unrecognized request URL ({method}: {rule}).")
    try:
        typed = _adapter(td).validate_python(params)
    except ValidationError as exc:
        raise _stripe_error(exc.errors(include_url=False), params) from None
    check_rules(typed)
    check_supported(method, rule, typed)
    return typed


def _rank(error: dict) -> tuple[int, int]:
    kind = error["type"]
    return (_PRIORITY.index(kind) if kind in _PRIORITY else len(_PRIORITY), -len(error["loc"]))


def param_path(loc: tuple, params: Any) -> list:
    """The keys and indexes of ``loc`` that are in ``params`` (and a last missing key); union tags dropped."""
    path, node = [], params
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
        elif not (i == len(loc) - 1 and isinstance(node, dict)):
            continue  # a union member's tag, e.g. "literal['']"
        path.append(part)
    return path


def param_name(path: list) -> str:
    """``["items", 0, "price"]`` -> ``items[0][price]``, as Stripe names a form parameter."""
    return str(path[0]) + "".join(f"[{part}]" for part in path[1:]) if path else ""


def _stripe_error(errors: list[dict], params: dict) -> StripeError:
    error = min(errors, key=_rank)
    path = param_path(error["loc"], params)
    name = param_name(path)
    kind = error["type"]
    if kind == "extra_forbidden":
        return StripeError(400, f"Received unknown parameter: {name}", code="parameter_unknown", param=name)
    if kind == "missing":
        return StripeError(400, f"Missing required param: {name}.", code="parameter_missing", param=name)
    if kind == "parameter_invalid_empty":
        return StripeError(400, f"You passed an empty string for '{name}'. We assume empty values are an "
                           f"attempt to unset a parameter; however '{name}' cannot be unset. You should "
                           f"remove '{name}' from your request or supply a non-empty value.",
                           code="parameter_invalid_empty", param=name)
    if kind in ("parameter_invalid_integer", "parameter_invalid_boolean"):
        code = kind if kind == "parameter_invalid_integer" else None
        return StripeError(400, error["msg"], code=code, param=name)
    if kind == "literal_error":
        choices = re.findall(r"'([^']*)'", error["ctx"]["expected"])
        listed = ", ".join(choices[:-1]) + f", or {choices[-1]}" if len(choices) > 1 else choices[0]
        return StripeError(400, f"Invalid {path[-1]}: must be one of {listed}", param=name)
    if kind in ("dict_type", "typed_dict_type", "model_type"):
        return StripeError(400, "Invalid object", param=name)
    if kind in ("list_type", "tuple_type"):
        return StripeError(400, "Invalid array", param=name)
    if kind == "string_type":
        return StripeError(400, f"Invalid string: {error['input']}", param=name)
    return StripeError(400, f"Invalid {path[-1] if path else 'value'}: {error['msg']}", param=name)
