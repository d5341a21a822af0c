"""The service's layout (issue 33 item 1, issue 43 item 3): ``app/billing`` imports in one direction (no import
circle, lazy imports inside functions included) and as docs/billing.md "Layout of app/billing" draws it, no two
packages of ``app/`` import each other both ways, and no module in ``app/`` is over 250 lines."""
import ast
import re
from pathlib import Path

from tests.support.layout import find_cycle

APP = Path(__file__).resolve().parent.parent / "app"
LAYOUT_DOC = APP.parent / "docs" / "billing.md"
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


def imports_anywhere(path):
    """Every absolute module name ``path`` imports, at module level or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
    return found


def markdown_table(text, header):
    """The rows (lists of cell texts) of the Markdown table of ``text`` whose header row is ``header``."""
    lines = text.splitlines()
    start = lines.index(header) + 2  # past the header and its ``|---|`` rule
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def billing_layout(text):
    """docs/billing.md's layout: ``({layer: layers it may import}, {module name: layer})``."""
    may_import = {layer: {name.strip() for name in allowed.split(",")}
                  for layer, _, allowed in markdown_table(text, "| Layer | What it is | May import |")}
    layer_of = {}
    for _, modules, layer in markdown_table(text, "| Concept | Module | Layer |"):
        for module in re.findall(r"`(\w+)`", modules):
            assert module not in layer_of, f"{module} is listed twice"
            layer_of[module] = layer
    return may_import, layer_of


def layer_violations(graph, layer_of, may_import):
    """The imports of ``graph`` (short module names) that their layer may not make, as ``(importer, imported)``."""
    return sorted((name, other) for name, imports in graph.items() for other in imports
                  if layer_of[other] not in may_import[layer_of[name]])


def short_billing_graph():
    return {name.rpartition(".")[2] if name != BILLING else "__init__":
            {other.rpartition(".")[2] for other in imports} for name, imports in billing_graph().items()}


def package_of(module):
    """The package of ``app`` that ``module`` (a dotted name) is in, or ``None`` for a module of ``app`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "app" and (APP / parts[1]).is_dir() else None


def package_graph():
    """``{package of app: packages of app it imports}``, imports inside functions included."""
    graph = {}
    for path in APP.rglob("*.py"):
        source = package_of(module_name(path))
        if source is not None:
            graph.setdefault(source, set()).update(
                other for name in imports_anywhere(path) if (other := package_of(name)) not in (None, source))
    return graph


def both_ways(graph):
    """The pairs ``(a, b)``, ``a < b``, of ``graph``'s nodes that import each other."""
    return sorted((a, b) for a, imports in graph.items() for b in imports if a < b and a in graph.get(b, ()))


def test_app_billing_has_no_import_circle():
    graph = billing_graph()
    assert len(graph) > 20 and any(graph.values()), "the graph was read"
    assert find_cycle(graph) is None


def test_no_module_in_app_is_over_250_lines():
    long = {str(path.relative_to(APP)): lines for path in APP.rglob("*.py")
            if (lines := len(path.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_app_billing_is_laid_out_as_its_doc_draws_it():
    may_import, layer_of = billing_layout(LAYOUT_DOC.read_text())
    graph = short_billing_graph()
    assert set(layer_of) == set(graph), "every module of app/billing is listed once, and every listed one exists"
    assert set(layer_of.values()) == set(may_import), "each module is in a layer the doc describes"
    assert layer_violations(graph, layer_of, may_import) == []
    stripe_importers = {name for name in graph
                        if any(module.split(".")[0] == "stripe" for module in imports_anywhere(
                            APP / "billing" / ("__init__.py" if name == "__init__" else f"{name}.py")))}
    assert stripe_importers == {name for name, layer in layer_of.items() if layer == "adapter"}


def test_the_layout_check_finds_an_import_its_layer_may_not_make():
    may_import = {"rules": {"rules", "contract"}, "contract": {"contract"}, "adapter": {"adapter", "contract"}}
    layer_of = {"prices": "rules", "provider": "contract", "stripe_provider": "adapter"}
    graph = {"prices": {"provider", "stripe_provider"}, "provider": set(), "stripe_provider": {"provider"}}
    assert layer_violations(graph, layer_of, may_import) == [("prices", "stripe_provider")]


def test_no_two_packages_of_app_import_each_other():
    graph = package_graph()
    assert {"billing", "models", "auth", "usage"} <= set(graph) and graph["billing"], "the graph was read"
    assert both_ways(graph) == []


def test_the_package_check_finds_two_that_import_each_other():
    assert both_ways({"auth": {"models", "usage"}, "usage": {"auth"}, "models": set()}) == [("auth", "usage")]
