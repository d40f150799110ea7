"""No test module imports another (ADR 0051), read from the source.

What tests share is in ``safelight.testing`` (doubles, row factories, builders) or is a
fixture in a ``conftest.py``, which pytest hands to the tests without an import. The
exceptions are test infrastructure that another part of the work owns and moves: the
PostgreSQL test server (``tests.dbserver``) and the reaper that ends what the tests start
(``tests.reaper``), the fault rig (``tests.faults``) and the
acceptance tests' process harness (``tests.acceptance.harness``).

Every import counts, at module level or inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

INFRASTRUCTURE = ("tests.dbserver", "tests.reaper", "tests.faults", "tests.acceptance.harness")
"""Importable from any test module: these and the modules below them."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(TESTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_test_modules(module: str, source: str) -> list[str]:
    """The modules of ``tests`` that ``source`` (the text of ``module``) imports, relative
    imports made absolute."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: -node.level]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # "from tests import dbserver" names a module; "from tests.x import y" may name
            # a function of tests.x, which is what counts.
            found += [f"{prefix}.{a.name}" for a in node.names] if prefix == "tests" else [prefix]
    return [name for name in found if name == "tests" or name.startswith("tests.")]


def allowed(importer: str, target: str) -> bool:
    return any(target == base or target.startswith(base + ".") for base in INFRASTRUCTURE)


def violations() -> list[tuple[str, str]]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        module = _module_name(path)
        for target in imported_test_modules(module, path.read_text()):
            if not allowed(module, target):
                found.append((module, target))
    return found


def test_no_test_module_imports_another() -> None:
    assert violations() == []


def test_the_check_sees_each_way_of_importing_a_test_module() -> None:
    source = """
from tests.unit.conftest import ITEM
import tests.integration.handlerfixtures
from tests import selfsigned
from .walking import given_out
def later():
    from tests.unit.test_supervisor import Store
from tests.faults.cluster import free_port
from tests.dbserver import PgTestServer
from safelight.testing.items import running_item
"""
    found = imported_test_modules("tests.unit.test_x", source)
    refused = {
        "tests.unit.conftest",
        "tests.integration.handlerfixtures",
        "tests.selfsigned",
        "tests.unit.walking",
        "tests.unit.test_supervisor",
    }
    assert sorted(found) == sorted(refused | {"tests.faults.cluster", "tests.dbserver"})
    assert {t for t in found if not allowed("tests.unit.test_x", t)} == refused
