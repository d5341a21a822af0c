"""The SDK's params TypedDicts made as strict as Stripe's API, for pydantic to check form values against.

The SDK types are lenient on purpose: every enum is ``Literal[...] | str`` so that an old SDK accepts a
new value. Stripe itself refuses a value its API version does not know, so the ``| str`` is dropped.
Form values are strings; integers and booleans are read as Stripe reads them (``"12"``, ``"true"``),
and an empty string (which unsets a parameter) is accepted only where the SDK type allows ``''``.
The request options the SDK strips before sending (``api_key``, ``idempotency_key``, ...) are not
parameters. Every TypedDict forbids keys it does not name.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Annotated, Any, Literal, Union

import typing_extensions
from pydantic import BeforeValidator, ConfigDict, with_config
from pydantic_core import PydanticCustomError
from stripe._request_options import RequestOptions
from stripe._stripe_object import UntypedStripeObject

# The most a list call returns per page, as Stripe enforces it.
LIMIT_MAX = 100


def _integer(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if value == "":
        raise PydanticCustomError("parameter_invalid_empty", "empty")
    raise PydanticCustomError("parameter_invalid_integer", "Invalid integer: {value}", {"value": value})


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    if value == "":
        raise PydanticCustomError("parameter_invalid_empty", "empty")
    raise PydanticCustomError("parameter_invalid_boolean", "Invalid boolean: {value}", {"value": value})


def _limit(value: Any) -> int:
    number = _integer(value)
    if not 1 <= number <= LIMIT_MAX:
        raise PydanticCustomError("parameter_invalid_integer",
                                  f"Invalid limit: must be between 1 and {LIMIT_MAX}", {"value": value})
    return number


StripeInteger = Annotated[int, BeforeValidator(_integer)]
StripeBoolean = Annotated[bool, BeforeValidator(_boolean)]
StripeLimit = Annotated[int, BeforeValidator(_limit)]

_OPTION_KEYS = frozenset(RequestOptions.__annotations__)


def _strict_union(args: tuple) -> Any:
    enum = any(typing.get_origin(arg) is Literal and set(typing.get_args(arg)) - {""} for arg in args)
    kept = tuple(strict(arg) for arg in args if not (enum and arg is str))
    return kept[0] if len(kept) == 1 else Union[kept]  # noqa: UP007 - built from a runtime tuple


def strict(hint: Any) -> Any:
    """``hint`` as Stripe checks it (see the module docstring)."""
    origin = typing.get_origin(hint)
    if hint is bool:
        return StripeBoolean
    if hint is int:
        return StripeInteger
    if typing_extensions.is_typeddict(hint):
        return strict_typeddict(hint)
    if origin in (Union, types.UnionType):
        return _strict_union(typing.get_args(hint))
    if origin is list:
        return list[strict(typing.get_args(hint)[0])]
    if origin is dict:
        key, value = typing.get_args(hint)
        return dict[key, strict(value)]
    if origin is UntypedStripeObject:  # the SDK's type of a free-form hash sent as a param
        return dict[str, strict(typing.get_args(hint)[0])]
    return hint


def hints(td: type) -> dict[str, Any]:
    """``td``'s parameters and their evaluated types, without the request options it may inherit.

    The options' own annotations name types the SDK imports for type checking only, so they are left
    out before evaluating: a stand-in class in ``td``'s module carries the rest.
    """
    own = {name: hint for name, hint in td.__annotations__.items()
           if not (RequestOptions in getattr(td, "__orig_bases__", ()) and name in _OPTION_KEYS)}
    stand_in = type(td.__name__, (), {"__annotations__": own, "__module__": td.__module__})
    return {name: _unwrap(hint) for name, hint in typing.get_type_hints(stand_in, include_extras=True).items()}


def _unwrap(hint: Any) -> Any:
    """``NotRequired[X]`` / ``Required[X]`` -> ``X`` (requiredness is read from the TypedDict)."""
    while typing.get_origin(hint) in (typing_extensions.NotRequired, typing_extensions.Required):
        hint = typing.get_args(hint)[0]
    return hint


@functools.cache
def strict_typeddict(td: type) -> type:
    """A TypedDict with ``td``'s parameters made strict, forbidding unknown keys."""
    fields = {}
    for name, hint in hints(td).items():
        checked = StripeLimit if name == "limit" and hint is int else strict(hint)
        fields[name] = checked if name in td.__required_keys__ else typing_extensions.NotRequired[checked]
    return with_config(ConfigDict(extra="forbid"))(typing_extensions.TypedDict(td.__name__, fields))
