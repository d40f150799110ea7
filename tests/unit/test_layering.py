"""The import layering of src/safelight, read from the source (CONTRIBUTING.md has the map).

``core`` is a leaf: it imports nothing of safelight but itself. The library and the
engine stand side by side on it: ``library`` never imports ``work`` and ``work`` never
imports ``library``, and neither imports what sits above them (handlers, CLI, app).
``observe`` (metrics, health, presence) sits on the engine and never imports the domain
or what is above it; nothing below the CLI imports the web dashboard (``web``), which
sits beside the CLI and never imports it: what both read of the queue and the library
(``views``) sits below them, on the engine. ``testing`` is test tooling that production
never imports; its one user inside src/ is ``safelight demo``, whose helper imports the
sample generator inside the function.

Every import counts, at module level or inside a function: a lazy import is still a
dependency.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "safelight"


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the importing module, e.g. "safelight.cli.run"
    function: str | None  # the function the import sits in; None at module level
    target: str  # the module imported, e.g. "safelight.testing.samplegen"

    @property
    def importer_package(self) -> str:
        """``core``, ``work``, ``cli`` ... or, for a top-level module, its name (``app``)."""
        parts = self.module.split(".")
        return parts[1] if len(parts) > 1 else ""

    @property
    def target_package(self) -> str | None:
        parts = self.target.split(".")
        return parts[1] if parts[0] == "safelight" and len(parts) > 1 else None


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> list[str]:
    """The modules an ``from ... import ...`` names, relative ones made absolute."""
    if node.level:
        base = module.split(".")
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        prefix = ".".join([*base, node.module] if node.module else base)
    else:
        prefix = node.module or ""
    if prefix == "safelight":  # "from safelight import work" imports safelight.work
        return [f"{prefix}.{alias.name}" for alias in node.names]
    return [prefix]


class _Collector(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.is_package = is_package
        self.function: str | None = None
        self.imports: list[Import] = []

    def _in_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, self.function = self.function, self.function or node.name
        self.generic_visit(node)
        self.function = outer

    visit_FunctionDef = _in_function
    visit_AsyncFunctionDef = _in_function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports.append(Import(self.module, self.function, alias.name))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for target in _resolve(self.module, self.is_package, node):
            self.imports.append(Import(self.module, self.function, target))


def _imports() -> list[Import]:
    found: list[Import] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        collector = _Collector(_module_name(path), path.name == "__init__.py")
        collector.visit(ast.parse(path.read_text("utf-8"), filename=str(path)))
        found.extend(collector.imports)
    return found


IMPORTS = _imports()
SAFELIGHT_IMPORTS = [i for i in IMPORTS if i.target_package is not None]

FORBIDDEN = {
    "library": {"work", "handlers", "cli", "app", "observe", "web"},
    "work": {"library", "handlers", "cli", "app", "observe", "web"},
    "observe": {"library", "handlers", "cli", "app", "web"},
    "handlers": {"cli", "web"},
    # What both front ends read of the queue and the library: below them both.
    "views": {"library", "handlers", "cli", "app", "observe", "web"},
    # Beside the CLI, never on it: the CLI imports the dashboard for ``serve``, and what
    # both read is ``views``.
    "web": {"cli"},
    # The dashboard's users: on the library (a user's name is an owner's name), below
    # the web's sign-in and the CLI's user commands, which both use it.
    "accounts": {"work", "handlers", "cli", "app", "observe", "web", "views"},
}

# The one import of safelight.testing outside testing/: ``safelight demo`` generates its
# demo library with the sample generator, imported inside the command's helper so that
# nothing else of the CLI loads it (ADR 0019).
DEMO_IMPORT = Import(
    module="safelight.cli.run",
    function="ensure_demo_library",
    target="safelight.testing.samplegen",
)


def test_the_walk_sees_every_package() -> None:
    importers = {i.importer_package for i in SAFELIGHT_IMPORTS}
    assert {
        "core",
        "library",
        "work",
        "handlers",
        "cli",
        "app",
        "testing",
        "observe",
        "web",
        "views",
        "accounts",
    } <= importers


def test_core_imports_nothing_of_safelight_but_itself() -> None:
    assert [i for i in SAFELIGHT_IMPORTS if i.importer_package == "core"]  # not vacuous
    assert [
        i for i in SAFELIGHT_IMPORTS if i.importer_package == "core" and i.target_package != "core"
    ] == []


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_library_and_work_stand_side_by_side_below_handlers_cli_and_app(package: str) -> None:
    """And ``observe`` above ``work``, beside ``handlers``: the engine reports to it
    through ``work.observer``, never by importing it."""
    assert [
        i
        for i in SAFELIGHT_IMPORTS
        if i.importer_package == package and i.target_package in FORBIDDEN[package]
    ] == []


def test_nothing_outside_testing_imports_it_at_module_level() -> None:
    assert [
        i
        for i in SAFELIGHT_IMPORTS
        if i.target_package == "testing" and i.importer_package != "testing" and i.function is None
    ] == []


def test_the_demo_lazy_import_is_the_only_use_of_testing_outside_it() -> None:
    """Workers, the CLI's other commands and the app never load test tooling: the only
    import of ``safelight.testing`` outside it is the demo's, inside its function."""
    assert [
        i
        for i in SAFELIGHT_IMPORTS
        if i.target_package == "testing" and i.importer_package != "testing"
    ] == [DEMO_IMPORT]
