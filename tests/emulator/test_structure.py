"""The emulator's shape (issue 26): one package per Stripe resource family over shared billing steps,
no import cycle between its modules (lazy imports inside functions count too), modules kept short."""

from __future__ import annotations

import ast
import pathlib

from tests.support.layout import find_cycle

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "stripe_emulator"
MAX_LINES = 260


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path, name: str, modules: set[str]) -> set[str]:
    """The emulator modules ``path`` imports (``from . import x`` names a module when one exists)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = package[:len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
        target = ".".join(part for part in base if part)
        for alias in node.names:
            sub = f"{target}.{alias.name}" if target else alias.name
            found.add(sub if sub in modules else target)
    return found & modules - {name}


def _graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: _imports(path, name, set(paths)) for name, path in paths.items()}


def test_no_module_imports_itself_back():
    assert find_cycle(_graph()) is None


def test_the_cycle_check_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) is not None


def test_shared_billing_steps_import_no_resource_family():
    families = ("customers", "products", "subscriptions", "invoices", "intents", "webhooks", "test_clocks", "pages")
    for name, imported in _graph().items():
        if name.startswith("billing") or name.startswith("core"):
            assert not {m for m in imported if m.startswith(families)}, name


def test_each_module_is_short():
    long = {p.name: n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
