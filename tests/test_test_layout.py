"""The tests' own layout (issue 43 item 4): what test modules share lives in ``tests/support``, so no module
of ``tests/`` imports from a test module (``test_*.py``) or from a conftest, lazily inside a function included.
Fixtures reach tests through pytest, never through an import of the conftest that defines them; a test
changes an app's config mid-test only through the ``configure`` fixture (tests/conftest.py)."""
import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def module_name(path):
    """``tests/emulator/test_api.py`` -> ``tests.emulator.test_api`` (a package's ``__init__`` is the package)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_test_or_conftest(module):
    last = module.rsplit(".", 1)[-1]
    return module.split(".")[0] == "tests" and (last.startswith("test_") or last == "conftest")


def forbidden_imports(module, source):
    """The test modules and conftests that ``source``, the text of module ``module``, imports anywhere in it.

    Relative imports are resolved against ``module``; ``from tests import test_x`` names ``tests.test_x``.
    """
    package = module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package[:len(package) - node.level + 1] if node.level else []
            base = ".".join(parts + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found += sorted({target for target in targets if _is_test_or_conftest(target)})
    return found


def test_no_module_of_the_tests_imports_a_test_module_or_a_conftest():
    offenders = {}
    for path in sorted(TESTS.rglob("*.py")):
        if "fixtures" in path.relative_to(TESTS).parts:
            continue
        if found := forbidden_imports(module_name(path), path.read_text()):
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, "move what is shared into tests/support and import it from there"


def test_the_check_finds_every_spelling_of_such_an_import():
    source = """
from tests.test_billing_flow import start_flow
from tests.conftest import register
from .conftest import openapi_example
from .test_subscription_flows import activate
from tests import test_accounts
from . import conftest
import tests.test_usage

def lazily():
    from tests.test_selling import checkout
"""
    assert forbidden_imports("tests.emulator.test_api", source) == [
        "tests.test_billing_flow", "tests.conftest", "tests.emulator.conftest",
        "tests.emulator.test_subscription_flows", "tests.test_accounts", "tests.emulator.conftest", "tests.test_usage",
        "tests.test_selling"]


def test_the_check_lets_the_support_package_and_the_tools_of_the_tests_through():
    source = """
from tests.support.accounts import register
from tests.support import events
from tests.ports import free_port
from tests.signing import sign
from .support import nothing_here
from app.models import User
import pytest
"""
    assert forbidden_imports("tests.reliability.test_faults", source) == []


def config_writes(source):
    """The lines of ``source`` that write an app's config directly: ``x.config[...] = ...`` or
    ``x.config.update(...)`` (and ``setdefault``, ``pop``, ``clear``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Attribute) and t.value.attr == "config"
               for t in targets):
            found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in ("update", "setdefault", "pop", "clear") and \
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "config":
            found.append(node.lineno)
    return sorted(found)


def test_tests_change_an_apps_config_only_through_the_configure_fixture():
    writes = {str(path.relative_to(ROOT)): lines for path in sorted(TESTS.rglob("test_*.py"))
              if (lines := config_writes(path.read_text()))}
    assert writes == {}, "use the configure fixture (tests/conftest.py), or make_app(...) / live_config from the start"


def test_the_config_check_finds_each_kind_of_write():
    source = """
app.config["A"] = 1
flow.app.config["B"] += 1
app.config.update(C=1)
app.config.setdefault("D", 1)
x = app.config["E"]
settings.update(F=1)
"""
    assert config_writes(source) == [2, 3, 4, 5]


def test_configure_sets_a_known_setting_on_the_tests_app_and_refuses_an_unknown_one(app, configure):
    configure(PROVIDER_TRIAL_DAYS=14)
    assert app.config["PROVIDER_TRIAL_DAYS"] == 14
    with pytest.raises(KeyError, match="PROVIDER_TRIAL_DAY"):
        configure(PROVIDER_TRIAL_DAY=7)
    assert "PROVIDER_TRIAL_DAY" not in app.config and app.config["PROVIDER_TRIAL_DAYS"] == 14


def test_configure_asks_which_app_when_the_test_made_several(make_app, configure):
    first, second = make_app(), make_app(METRICS_ENABLED="true")
    with pytest.raises(LookupError, match="2 apps"):
        configure(PROVIDER_TRIAL_DAYS=3)
    configure(second, PROVIDER_TRIAL_DAYS=3)
    assert (first.config["PROVIDER_TRIAL_DAYS"] != 3, second.config["PROVIDER_TRIAL_DAYS"]) == (True, 3)
