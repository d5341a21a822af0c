"""Which SDK params type each API operation takes, derived from the SDK's own service classes.

Every ``stripe/**/_*_service.py`` method calls ``self._request("post", "/v1/...".format(...),
params=params)`` with ``params: Optional["XParams"]``; reading those sources gives the table
``(method, path template) -> TypedDict`` for every operation the pinned SDK knows, so upgrading the
pin re-derives it.
"""

from __future__ import annotations

import ast
import functools
import importlib
import pathlib
import re

import stripe

_PLACEHOLDER = re.compile(r"\{[^}]+\}|<[^>]+>")


def route_key(method: str, template: str) -> tuple[str, str]:
    """``("POST", "/v1/subscriptions/{}")`` for an SDK template (``{id}``) or a Flask rule (``<id>``)."""
    return method.upper(), _PLACEHOLDER.sub("{}", template)


def _type_checking_imports(tree: ast.Module) -> dict[str, str]:
    """Name -> module of the params types a service module imports for type checking only."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("stripe.params"):
            for alias in node.names:
                names[alias.asname or alias.name] = node.module
    return names


def _request_call(method: ast.FunctionDef) -> tuple[str, str] | None:
    """``(http method, path template)`` of the ``self._request(...)`` call in an SDK service method."""
    for node in ast.walk(method):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "_request" and len(node.args) >= 2:
            verb, path = node.args[0], node.args[1]
            if isinstance(path, ast.Call) and isinstance(path.func, ast.Attribute):
                path = path.func.value  # "/v1/x/{id}".format(...)
            if isinstance(verb, ast.Constant) and isinstance(path, ast.Constant):
                return verb.value, path.value
    return None


def _params_name(method: ast.FunctionDef) -> str | None:
    for arg in method.args.args + method.args.kwonlyargs:
        if arg.arg == "params" and arg.annotation is not None:
            match = re.search(r"\"(\w+)\"|'(\w+)'", ast.unparse(arg.annotation))
            return match and (match.group(1) or match.group(2))
    return None


@functools.cache
def operations() -> dict[tuple[str, str], tuple[str, str]]:
    """``route_key -> (module, name)`` of the params TypedDict of every ``/v1`` operation of the installed SDK.

    Named, not imported: importing the 556 params modules of the pinned SDK cost the emulator's first request
    about 0.7 s of CPU, where a run needs the few its requests name.
    """
    table: dict[tuple[str, str], tuple[str, str]] = {}
    for source in sorted(pathlib.Path(stripe.__file__).parent.rglob("_*_service.py")):
        tree = ast.parse(source.read_text())
        imports = _type_checking_imports(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or node.name.endswith("_async"):
                continue
            call, name = _request_call(node), _params_name(node)
            if call is None or name not in imports or not call[1].startswith("/v1/"):
                continue
            key = route_key(*call)
            table.setdefault(key, (imports[name], name))
    return table


@functools.cache
def params_type(method: str, rule: str) -> type | None:
    """The SDK params type of the operation a Flask ``rule`` answers, or ``None`` when the SDK has none."""
    found = operations().get(route_key(method, rule))
    return None if found is None else getattr(importlib.import_module(found[0]), found[1])
