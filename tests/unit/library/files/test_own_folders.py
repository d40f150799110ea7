"""safelight's own folders have one definition (``files.roots``), and the two places
that keep roots out of them agree: the checks of a root (on resolved paths) and the
walk (on device and inode)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import safelight
from safelight.library.files.originals import StorageRoot
from safelight.library.files.roots import (
    DATA_FOLDER,
    DEMO_FOLDER,
    RootOverlap,
    check_apart,
    own_folder_holding,
    own_folders,
)
from safelight.library.walk.crawl import Walker

SRC = Path(safelight.__file__).resolve().parent


def _definitions(tree: Path, names: set[str]) -> list[str]:
    found = []
    for path in sorted(tree.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in names:
                found.append(f"{path.relative_to(tree)}:{node.name}")
    return found


def test_own_folders_are_defined_once() -> None:
    assert _definitions(SRC, {"OwnFolder", "own_folders"}) == [
        "library/files/roots.py:OwnFolder",
        "library/files/roots.py:own_folders",
    ]


def test_the_definition_check_sees_a_second_definition(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class OwnFolder:\n    pass\n")
    (tmp_path / "b.py").write_text("def own_folders() -> None:\n    pass\n")
    assert _definitions(tmp_path, {"OwnFolder", "own_folders"}) == [
        "a.py:OwnFolder",
        "b.py:own_folders",
    ]


ROOTS = [
    "elsewhere",
    "home",
    "home/other",
    f"home/{DEMO_FOLDER}",
    f"home/{DEMO_FOLDER}/2024",
    f"home/{DATA_FOLDER}",
    f"home/{DATA_FOLDER}/base",
    "home/proxies",
    "home/proxies/c0",
    "px",
    "px/c0",
]


@pytest.mark.parametrize("proxies", ["home/proxies", "px"])
@pytest.mark.parametrize("relative", ROOTS)
def test_the_walk_and_the_root_checks_refuse_the_same_roots(
    tmp_path: Path, proxies: str, relative: str
) -> None:
    for folder in ROOTS:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    own = own_folders(tmp_path / "home", tmp_path / proxies)
    root = tmp_path / relative
    contains = [f for f in own if f.path.is_relative_to(root) and f.path != root]
    if contains:
        pytest.skip("a root around an own folder: the walk skips it inside, by design")
    try:
        check_apart(root, own)
        refused = None
    except RootOverlap as exc:
        refused = str(exc)
    holding = own_folder_holding(root, own)
    assert (holding is None) == (refused is None), (relative, refused, holding)
    if holding is not None and refused is not None:
        assert f"safelight's {holding.what}" in refused


def test_a_root_in_the_home_outside_the_demo_library_is_not_walked(tmp_path: Path) -> None:
    root = tmp_path / "home" / "photos"
    root.mkdir(parents=True)
    (root / "a.jpg").write_bytes(b"a photo")
    with StorageRoot(root) as storage:
        walker = Walker(storage, own_folders(tmp_path / "home", tmp_path / "px"))
        while not walker.done:
            walker.step()
    assert [e.reason for e in walker.skipped] == [
        f"the storage root is inside safelight's own folder (home, {tmp_path / 'home'}): "
        "not crawled"
    ]
