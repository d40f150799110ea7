"""Every named query is used, every name looked up exists, and names read subject first
(ADR 0020).

The query files are the ones ``src/`` loads: a module-level ``X = load_queries(package,
file)``. A lookup is ``X["name"]`` on that mapping under whatever name a module has it
by (``QUERIES``, ``assets.QUERIES``): names are resolved through each file's imports and
compared by identity with the loaded mapping, so an alias is followed and a same-named
mapping of another file is not confused with it. Any other use of a mapping in ``src/``
(a lookup by a variable, ``.get``, passing it along) is one this test cannot follow and
fails it, unless it is one of the ``_INDIRECT`` helpers below, whose callers name the
query as a literal argument.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import safelight
from safelight.core.sql import parse_queries

_SRC = Path(safelight.__file__).resolve().parent
_REPO = _SRC.parents[1]

# Functions that take a query's name and look it up themselves: the parameter that
# carries the name, and the mapping it is looked up in. A call to one counts as a lookup
# of its literal argument; inside one, the lookup by that variable is allowed.
_INDIRECT: dict[str, tuple[str, str]] = {
    # views/queries.py runs each operator view through _rows (and _row, one row of it):
    # list_items calls _rows(pool, "items_list", ...), queue_status _row(pool, ...).
    "safelight.views.queries._rows": ("name", "safelight.views.queries.QUERIES"),
    "safelight.views.queries._row": ("name", "safelight.views.queries.QUERIES"),
    "safelight.views.failedfiles._fetch": ("name", "safelight.views.failedfiles.QUERIES"),
}

# The first word of a name: the table or thing the query reads or changes. A query of a
# new table adds its noun here; a verb here would undo the convention.
_SUBJECTS = frozenset(
    {
        "asset",
        "assets",
        "attempt",
        "attempts",
        "burst",
        "bursts",
        "config",
        "configs",
        "database",
        "duplicate",
        "duplicates",
        "face",
        "faces",
        "item",
        "items",
        "library",
        "livephoto",
        "migration",
        "migrations",
        "paused",
        "people",
        "person",
        "proxies",
        "proxy",
        "schedule",
        "server",
        "session",
        "similar",
        "sessions",
        "status",
        "token",
        "tokens",
        "user",
        "users",
        "workers",
        # The catalogue's backup and restore (db/backup.sql, ADR 0061).
        "backup",
        "catalogue",
        "sequence",
        "sequences",
        "table",
        "tables",
    }
)


@dataclass(frozen=True)
class _Loaded:
    qualname: str  # where the mapping is bound, e.g. "safelight.library.catalogue.assets.QUERIES"
    sql_file: Path
    queries: Mapping[str, str]


@dataclass(frozen=True)
class _Lookup:
    loaded: _Loaded
    name: str
    where: str  # path:line


def _module_name(path: Path) -> str:
    parts = path.relative_to(_SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _python_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if ".venv" not in p.parts)


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), filename=str(path))


def _is_load_queries(node: ast.expr) -> bool:
    func = node.func if isinstance(node, ast.Call) else None
    return (isinstance(func, ast.Name) and func.id == "load_queries") or (
        isinstance(func, ast.Attribute) and func.attr == "load_queries"
    )


@functools.cache
def _loaded_files() -> tuple[_Loaded, ...]:
    """Every module-level ``X = load_queries("package", "file.sql")`` of ``src/``."""
    found = []
    for path in _python_files(_SRC):
        module = _module_name(path)
        for node in _parse(path).body:
            target, value = _assignment(node)
            if target is None or value is None or not _is_load_queries(value):
                continue
            assert isinstance(value, ast.Call)
            package, filename = (ast.literal_eval(arg) for arg in value.args)
            mapping = getattr(importlib.import_module(module), target)
            sql_file = Path(str(resources.files(package) / filename)).resolve()
            found.append(_Loaded(f"{module}.{target}", sql_file, mapping))
    return tuple(found)


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target = node.targets[0]
        return (target.id if isinstance(target, ast.Name) else None), node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id, node.value
    return None, None


def _bindings(tree: ast.Module, nodes: list[ast.AST], module: str | None) -> dict[str, str]:
    """The file's names that stand for something of ``safelight``, by qualified name:
    its imports, and (for a module of ``src/``) its own top-level names."""
    names: dict[str, str] = {}
    if module is not None:
        for statement in tree.body:
            target, _ = _assignment(statement)
            if target is not None:
                names[target] = f"{module}.{target}"
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                names[statement.name] = f"{module}.{statement.name}"
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
    return names


def _qualified(node: ast.expr, names: Mapping[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, names)
        return None if base is None else f"{base}.{node.attr}"
    return None


@functools.cache
def _resolve(qualname: str) -> Any:
    """The object ``qualname`` names, importing only ``safelight``'s own modules."""
    if qualname != "safelight" and not qualname.startswith("safelight."):
        return None
    parts = qualname.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr, None)
        return obj
    return None


def _enclosing_functions(tree: ast.Module, module: str) -> dict[ast.AST, str]:
    """Each node inside a top-level function, mapped to that function's qualified name."""
    owner: dict[ast.AST, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                owner[inner] = f"{module}.{node.name}"
    return owner


def _string(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


@dataclass
class _Scan:
    lookups: list[_Lookup]
    unfollowed: list[str]  # uses of a mapping this test cannot follow


def _scan(
    path: Path,
    loaded: tuple[_Loaded, ...],
    *,
    in_src: bool,
    module: str | None = None,
    where: Path | None = None,
) -> _Scan:
    """``module`` and ``where`` (the file's module and its path in the repository) are
    derived from ``path`` unless given, as for a planted file outside the tree."""
    tree = _parse(path)
    nodes = list(ast.walk(tree))
    if in_src and module is None:
        module = _module_name(path)
    names = _bindings(tree, nodes, module)
    owner = _enclosing_functions(tree, module) if module else {}
    by_identity = {id(entry.queries): entry for entry in loaded}
    helpers = {id(_resolve(qualname)): qualname for qualname in _INDIRECT}
    where = path.relative_to(_REPO) if where is None else where
    scan = _Scan([], [])

    def mapping_of(node: ast.expr) -> _Loaded | None:
        qualname = _qualified(node, names)
        return None if qualname is None else by_identity.get(id(_resolve(qualname)))

    followed: set[ast.AST] = set()
    for node in nodes:
        if isinstance(node, ast.Subscript) and (entry := mapping_of(node.value)):
            followed.add(node.value)
            name = _string(node.slice)
            if name is not None:
                scan.lookups.append(_Lookup(entry, name, f"{where}:{node.lineno}"))
            elif in_src and owner.get(node) not in _INDIRECT:
                scan.unfollowed.append(f"{where}:{node.lineno}: a lookup by a variable")
        elif isinstance(node, ast.Dict):
            # {**QUERIES, "name": other_sql}: a stand-in for one query (a broken build's).
            for key, value in zip(node.keys, node.values, strict=True):
                if key is None and (entry := mapping_of(value)):
                    followed.add(value)
                    for other in node.keys:
                        if (name := _string(other)) is not None:
                            scan.lookups.append(_Lookup(entry, name, f"{where}:{node.lineno}"))
        elif isinstance(node, ast.Call) and (helper := _helper_of(node, names, helpers)):
            parameter, mapping = _INDIRECT[helper]
            name = _string(_argument(node, helper, parameter))
            if name is not None:
                target = by_identity[id(_resolve(mapping))]
                scan.lookups.append(_Lookup(target, name, f"{where}:{node.lineno}"))
            elif in_src and owner.get(node) not in _INDIRECT:
                scan.unfollowed.append(f"{where}:{node.lineno}: {helper} by a variable")
    if in_src:  # ``QUERIES.get(name)``, ``f(QUERIES)``: a use the scan cannot follow
        for node in nodes:
            if (
                isinstance(node, ast.Name | ast.Attribute)
                and isinstance(node.ctx, ast.Load)
                and node not in followed
                and mapping_of(node) is not None
            ):
                scan.unfollowed.append(f"{where}:{node.lineno}: the mapping itself")
    return scan


def _helper_of(node: ast.Call, names: Mapping[str, str], helpers: dict[int, str]) -> str | None:
    qualname = _qualified(node.func, names)
    return None if qualname is None else helpers.get(id(_resolve(qualname)))


def _argument(node: ast.Call, helper: str, parameter: str) -> ast.expr | None:
    for keyword in node.keywords:
        if keyword.arg == parameter:
            return keyword.value
    position = list(inspect.signature(_resolve(helper)).parameters).index(parameter)
    return node.args[position] if position < len(node.args) else None


@functools.cache
def _all_scans() -> tuple[tuple[bool, _Scan], ...]:
    """Each Python file of src/, tests/, bench/ and scripts/, scanned (in src/ or not)."""
    loaded = _loaded_files()
    scans = [(True, _scan(path, loaded, in_src=True)) for path in _python_files(_SRC)]
    for folder in ("tests", "bench", "scripts"):
        scans += [(False, _scan(p, loaded, in_src=False)) for p in _python_files(_REPO / folder)]
    return tuple(scans)


def test_every_file_of_named_queries_is_loaded_once() -> None:
    loaded = _loaded_files()
    named = sorted(p.resolve() for p in _SRC.rglob("*.sql") if parse_queries(p.read_text("utf-8")))
    assert sorted(entry.sql_file for entry in loaded) == named
    for entry in loaded:
        assert dict(entry.queries) == dict(parse_queries(entry.sql_file.read_text("utf-8")))


def test_every_named_query_is_used_and_every_name_used_exists() -> None:
    loaded = _loaded_files()
    used: dict[str, set[str]] = {entry.qualname: set() for entry in loaded}
    missing, unfollowed = [], []
    for in_src, scan in _all_scans():
        unfollowed += scan.unfollowed
        for lookup in scan.lookups:
            if lookup.name not in lookup.loaded.queries:
                missing.append(
                    f"{lookup.where}: {lookup.name!r} is not in {lookup.loaded.qualname}"
                )
            elif in_src:
                used[lookup.loaded.qualname].add(lookup.name)
    assert missing == []
    assert unfollowed == []
    unused = {
        str(entry.sql_file.relative_to(_REPO)): sorted(set(entry.queries) - used[entry.qualname])
        for entry in loaded
    }
    assert {file: names for file, names in unused.items() if names} == {}


def test_the_scan_sees_the_lookups_it_must() -> None:
    """The scan itself: a direct lookup, one through an import, and one through a helper."""
    lookups = {
        (lookup.loaded.qualname, lookup.name, lookup.where.split(":")[0])
        for _, scan in _all_scans()
        for lookup in scan.lookups
    }
    assert ("safelight.work.store.QUERIES", "items_claim", "src/safelight/work/store.py") in lookups
    assert (
        "safelight.library.catalogue.proxies.QUERIES",
        "proxies_repoint",
        "src/safelight/library/catalogue/proxies.py",
    ) in lookups
    assert (
        "safelight.views.queries.QUERIES",
        "items_list",
        "src/safelight/views/queries.py",
    ) in lookups
    stand_in = "tests/faults/builds/breaks.py"
    assert ("safelight.work.store.QUERIES", "attempt_lock", stand_in) in lookups


def test_names_read_subject_first_and_each_query_says_what_it_does() -> None:
    header = re.compile(r"^[a-z]+(_[a-z]+)*$")
    odd, undescribed = [], []
    for entry in _loaded_files():
        for name, sql in entry.queries.items():
            if not header.match(name) or name.split("_")[0] not in _SUBJECTS:
                odd.append(f"{entry.sql_file.name}: {name}")
            if not sql.startswith("-- "):
                undescribed.append(f"{entry.sql_file.name}: {name}")
    assert odd == []
    assert undescribed == []


def _owner_file(loaded: _Loaded) -> str:
    """The file of the module that loads the mapping, relative to the repository."""
    module = loaded.qualname.rsplit(".", 1)[0]
    return str(Path("src", *module.split(".")).with_suffix(".py"))


def _lookups_elsewhere(scans: list[_Scan]) -> list[str]:
    return sorted(
        f"{lookup.where}: {lookup.name!r} of {lookup.loaded.qualname}"
        for scan in scans
        for lookup in scan.lookups
        if lookup.where.split(":")[0] != _owner_file(lookup.loaded)
    )


def test_each_query_mapping_is_read_only_in_the_module_that_loads_it() -> None:
    """One owner per query file: the module that loads it is the only one of ``src/``
    that looks a query up in it; everyone else calls that module's functions."""
    assert _lookups_elsewhere([scan for in_src, scan in _all_scans() if in_src]) == []


def test_a_lookup_from_another_module_is_seen(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from safelight.library.catalogue import proxies\n"
        "from safelight.library.catalogue.assets import QUERIES\n\n\n"
        "async def f(conn):\n"
        '    await conn.execute(proxies.QUERIES["proxy_paths_named"], {})\n'
        '    await conn.execute(QUERIES["asset_delete"], {})\n'
    )
    scan = _scan(
        planted,
        _loaded_files(),
        in_src=True,
        module="safelight.handlers.planted",
        where=Path("src/safelight/handlers/planted.py"),
    )
    assert _lookups_elsewhere([scan]) == [
        "src/safelight/handlers/planted.py:6: 'proxy_paths_named' of "
        "safelight.library.catalogue.proxies.QUERIES",
        "src/safelight/handlers/planted.py:7: 'asset_delete' of "
        "safelight.library.catalogue.assets.QUERIES",
    ]
