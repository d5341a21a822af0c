"""The service's layout (issue 33 item 1): ``app/billing`` imports in one direction (no import circle,
lazy imports inside functions included), and no module in ``app/`` is over 250 lines."""
import ast
from pathlib import Path

from tests.emulator.test_structure import _cycle

APP = Path(__file__).resolve().parent.parent / "app"
BILLING = "app.billing"
MAX_LINES = 250


def module_name(path):
    parts = path.relative_to(APP.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path, modules):
    """The modules of ``modules`` that ``path`` imports anywhere in it (``from app.billing import x``
    names the module ``app.billing.x`` when there is one)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found |= {f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in modules else node.module
                      for alias in node.names}
    return found & modules


def billing_graph():
    paths = {module_name(path): path for path in (APP / "billing").rglob("*.py")}
    return {name: imported(path, set(paths)) - {name} for name, path in paths.items()}


def test_app_billing_has_no_import_circle():
    graph = billing_graph()
    assert len(graph) > 20 and any(graph.values()), "the graph was read"
    assert _cycle(graph) is None


def test_no_module_in_app_is_over_250_lines():
    long = {str(path.relative_to(APP)): lines for path in APP.rglob("*.py")
            if (lines := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}
