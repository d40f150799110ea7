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

Inside ``library``, the sub-packages have one-way arrows too (``LIBRARY_ARROWS``, ADR
0046): ``files`` is their leaf, ``media`` reads files, ``render`` makes pixels of them,
``grouping`` groups what they show; ``catalogue`` (the database) stands on files and
media, ``proxystore`` on files and the catalogue, and ``walk`` (the crawl's walk) may use
them all. Only ``catalogue`` of the library, and ``db`` and the engine's own query owners,
load named SQL (``SQL_OWNERS``), each its own package's files.

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


def _module_name(path: Path, src: Path = SRC) -> str:
    parts = path.relative_to(src).with_suffix("").parts
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


def _imports(src: Path = SRC) -> list[Import]:
    found: list[Import] = []
    for path in sorted((src / "safelight").rglob("*.py")):
        collector = _Collector(_module_name(path, src), path.name == "__init__.py")
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


# Who may import whom inside ``library``: each sub-package and the others it may import
# (lower never imports higher). ``proxystore`` reads the catalogue for the rows that name
# its files; ``walk`` joins everything a crawl needs.
LIBRARY_ARROWS: dict[str, frozenset[str]] = {
    "files": frozenset(),
    "media": frozenset({"files"}),
    "render": frozenset({"files", "media"}),
    "grouping": frozenset({"files", "media", "render"}),
    "faces": frozenset({"files"}),
    "catalogue": frozenset({"files", "media"}),
    "proxystore": frozenset({"files", "catalogue"}),
    "walk": frozenset(
        {"files", "media", "render", "grouping", "catalogue", "proxystore", "places"}
    ),
    # Where, offline: a leaf (its data is installed packages'); the walk and the place
    # fill read it.
    "places": frozenset(),
}


def _library_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["safelight", "library"] and len(parts) > 2 else None


def _library_arrows_broken(imports: list[Import]) -> list[str]:
    broken = []
    for i in imports:
        importer, target = _library_part(i.module), _library_part(i.target)
        if importer is None or target is None or importer == target:
            continue
        if target not in LIBRARY_ARROWS.get(importer, frozenset()):
            broken.append(f"{i.module} imports {i.target}")
    return broken


def test_every_library_sub_package_has_its_arrows() -> None:
    library = PACKAGE / "library"
    found = {p.parent.name for p in library.glob("*/__init__.py")}
    assert found == set(LIBRARY_ARROWS)
    assert sorted(p.name for p in library.glob("*.py")) == ["__init__.py"]


def test_library_sub_packages_import_one_way() -> None:
    assert [i for i in IMPORTS if _library_part(i.target) and _library_part(i.module)]
    assert _library_arrows_broken(IMPORTS) == []


def _plant(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / "safelight" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for folder in path.relative_to(tmp_path).parents:
        if folder != Path("."):
            (tmp_path / folder / "__init__.py").touch()
    path.write_text(text)
    return tmp_path


def test_the_library_arrows_see_an_import_upwards(tmp_path: Path) -> None:
    src = _plant(
        tmp_path,
        "library/files/planted.py",
        "def f() -> None:\n    from safelight.library.walk import crawl  # noqa\n",
    )
    _plant(src, "library/proxystore/fine.py", "from safelight.library.files import roots\n")
    assert _library_arrows_broken(_imports(src)) == [
        "safelight.library.files.planted imports safelight.library.walk"
    ]


SQL_OWNERS = frozenset(
    {
        "safelight.library.catalogue",
        "safelight.db",
        "safelight.work",
        "safelight.accounts",
        "safelight.observe",
        "safelight.views",
        "safelight.web",
    }
)
"""The packages that hold named SQL: the library's catalogue, the database's own, and
the engine's and front ends' query files."""


def _sql_out_of_place(src: Path) -> list[str]:
    """``.sql`` files outside the owners, and ``load_queries`` calls that load another
    package's files or sit outside the owners."""
    package = src / "safelight"
    found = [
        f"{path.relative_to(src)}: a .sql file outside the query owners"
        for path in sorted(package.rglob("*.sql"))
        if not any(
            _module_name(path.parent, src) == owner
            or _module_name(path.parent, src).startswith(owner + ".")
            for owner in SQL_OWNERS
        )
    ]
    for path in sorted(package.rglob("*.py")):
        module = _module_name(path, src)
        home = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not (isinstance(node, ast.Call) and _calls_load_queries(node)):
                continue
            loaded = (
                node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            )
            if home not in SQL_OWNERS or loaded != home:
                found.append(f"{module} loads {loaded!r}")
    return found


def _calls_load_queries(node: ast.Call) -> bool:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    return name == "load_queries"


def test_only_the_query_owners_hold_and_load_sql() -> None:
    assert list(PACKAGE.rglob("*.sql"))  # not vacuous
    assert _sql_out_of_place(SRC) == []


def test_the_sql_check_sees_sql_out_of_place(tmp_path: Path) -> None:
    src = _plant(
        tmp_path,
        "library/proxystore/planted.py",
        'QUERIES = load_queries("safelight.library.proxystore", "planted.sql")\n',
    )
    (src / "safelight/library/proxystore/planted.sql").write_text("-- a --\nSELECT 1\n")
    _plant(
        src, "handlers/borrowed.py", 'Q = load_queries("safelight.library.catalogue", "x.sql")\n'
    )
    _plant(
        src,
        "library/catalogue/fine.py",
        'Q = load_queries("safelight.library.catalogue", "f.sql")\n',
    )
    (src / "safelight/library/catalogue/f.sql").write_text("-- f --\nSELECT 1\n")
    assert _sql_out_of_place(src) == [
        "safelight/library/proxystore/planted.sql: a .sql file outside the query owners",
        "safelight.handlers.borrowed loads 'safelight.library.catalogue'",
        "safelight.library.proxystore.planted loads 'safelight.library.proxystore'",
    ]
