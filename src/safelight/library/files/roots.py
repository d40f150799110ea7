"""Which folders may be storage roots: none that holds safelight's own files, none inside
them, and no system folder.

safelight writes into its home (the embedded database, sockets), its proxy root (the
proxies, which the proxy sweep also deletes) and nowhere else. A storage root that
contains one of them would have safelight's files crawled as photos, run after run; a
storage root inside one of them would put originals where safelight writes and deletes.
So the two sets of folders are kept disjoint, in both directions, on resolved paths,
wherever a root meets a setting: ``config add``, ``run``, ``config enable``, and before
anything is written or deleted under the proxy root (the start of a Worker, its marker,
each crawl, sweep, purge and proxy deletion). The last checks every registered config,
whatever its state or owner: a disabled config's folder still holds originals, and the
settings may have moved the proxy root onto it since it was disabled. The one exception
is the demo library, which safelight generates in its home for ``safelight demo``: it
lies outside the proxy root and the database, and holds nothing but safelight's own
sample files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

DEMO_FOLDER = "demo-library"
"""The demo library's folder in the home (``safelight demo``)."""
DATA_FOLDER = "pgdata"
"""The embedded PostgreSQL's data folder in the home."""

SYSTEM_FOLDERS = frozenset(
    Path(p) for p in ("/", "/home", "/mnt", "/media", "/srv", "/opt", "/var", "/tmp", "/root")
)
"""Folders refused as roots themselves (too wide: everyone's files, other mounts); a
library below them is fine."""
SYSTEM_TREES = tuple(
    Path(p)
    for p in (
        "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc",
        "/run", "/sbin", "/sys", "/usr", "/var/lib/postgresql", "/var/log",
    )
)  # fmt: skip
"""Trees of the operating system: neither they nor anything below them is a library."""


class RootOverlap(ValueError):
    """A storage root and one of safelight's own folders overlap, or the root is a system
    folder; the message names both paths and how to fix it."""


@dataclass(frozen=True, slots=True)
class OwnFolder:
    """A folder safelight writes into, with the setting that moves it: the one definition
    of safelight's own folders, which the checks of a root (below) and the walk
    (``walk.crawl.Walker``) both read."""

    what: str
    """Shown in messages: ``"proxy root"``, ``"embedded database"``, ``"home"``."""
    path: Path
    """Resolved."""
    setting: str
    allowed_inside: tuple[Path, ...] = ()
    """Resolved folders below ``path`` that may be storage roots all the same."""


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path.expanduser()))


def own_folders(home: Path, proxy_root: Path) -> tuple[OwnFolder, ...]:
    """safelight's folders for these settings (``Settings.home``, ``Settings.proxies``)."""
    home = _resolved(home)
    return (
        OwnFolder("proxy root", _resolved(proxy_root), "SAFELIGHT_PROXY_ROOT"),
        OwnFolder("embedded database", _resolved(home / DATA_FOLDER), "SAFELIGHT_HOME"),
        OwnFolder("home", home, "SAFELIGHT_HOME", allowed_inside=(home / DEMO_FOLDER,)),
    )


FolderId = tuple[int, int]
"""A folder's device and inode: a bind mount or a link to it is the same folder."""


def folder_id(path: Path) -> FolderId | None:
    """``path``'s device and inode (links followed); None if it does not exist (a folder
    that does not exist yet cannot be walked into; if it appears during a walk it is
    safelight's doing, after the walk)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def by_folder_id(own: Iterable[OwnFolder]) -> dict[FolderId, OwnFolder]:
    """Those of ``own`` that exist, by device and inode: what a walk recognises them by,
    wherever they appear below a root and under whatever name."""
    return {key: folder for folder in own if (key := folder_id(folder.path)) is not None}


def own_folder_holding(root: Path, own: Sequence[OwnFolder]) -> OwnFolder | None:
    """The folder of ``own`` that ``root`` is or lies inside, the nearest first, unless
    ``root`` lies in one of that folder's ``allowed_inside``: the rule of ``check_apart``
    (inside), on device and inode instead of resolved paths, as a walk checks its root
    (a folder reached through a bind mount is still the same folder)."""
    chain: list[FolderId | None] = []
    folder = root
    while True:
        chain.append(folder_id(folder))
        if folder.parent == folder:
            break
        folder = folder.parent
    known = by_folder_id(own)
    for depth, key in enumerate(chain):
        found = known.get(key) if key is not None else None
        if found is None:
            continue
        allowed = {folder_id(path) for path in found.allowed_inside} - {None}
        if not allowed.intersection(chain[:depth]):
            return found
    return None


@dataclass(frozen=True, slots=True)
class RegisteredRoot:
    """A storage config's root as the overlap checks see it."""

    root: Path
    name: str
    """How an error names the config: ``storage config <id> of <owner>``."""
    active: bool


def check_storage_root(root: Path, own: Sequence[OwnFolder]) -> None:
    """Raise :class:`RootOverlap` unless ``root`` (resolved) may be a storage root."""
    root = _resolved(root)
    if root in SYSTEM_FOLDERS or any(root.is_relative_to(tree) for tree in SYSTEM_TREES):
        raise RootOverlap(
            f"{root} is a system folder, not a folder of photos: choose the folder that "
            "holds the photos themselves"
        )
    check_apart(root, own)


def check_apart(root: Path, own: Sequence[OwnFolder]) -> None:
    """Raise :class:`RootOverlap` if ``root`` (resolved) is, contains or lies in one of
    safelight's folders."""
    root = _resolved(root)
    for folder in own:
        if folder.path == root:
            raise RootOverlap(
                f"the folder {root} is safelight's {folder.what}, where safelight writes and "
                f"deletes its own files: set {folder.setting} to a folder of safelight's own, "
                "outside every library"
            )
    # Around: the widest folder first, so that the fix named moves all of them (a home
    # holds the default proxy root and the data folder).
    for folder in sorted(own, key=lambda f: len(f.path.parts)):
        if folder.path.is_relative_to(root):
            raise RootOverlap(
                f"the folder {root} contains safelight's {folder.what} {folder.path}: its "
                f"files would be crawled as photos; set {folder.setting} outside {root}, "
                "or choose a folder that does not contain it"
            )
    # Inside: the narrowest first, the folder that names what happens there.
    for folder in sorted(own, key=lambda f: len(f.path.parts), reverse=True):
        if root.is_relative_to(folder.path) and not any(
            root.is_relative_to(allowed) for allowed in folder.allowed_inside
        ):
            raise RootOverlap(
                f"the folder {root} is inside safelight's {folder.what} {folder.path}, "
                "where safelight writes and deletes its own files: keep photos outside it, "
                f"or set {folder.setting} elsewhere"
            )


def check_registered_roots(registered: Iterable[RegisteredRoot], own: Sequence[OwnFolder]) -> None:
    """Every registered config against safelight's folders, before anything is written
    or deleted under the proxy root: raise :class:`RootOverlap` naming the first config
    that overlaps. A disabled config is checked for overlap only (its folder still holds
    originals); an active one as a storage root (no system folder either), as its next
    crawl will check it."""
    for config in registered:
        try:
            if config.active:
                check_storage_root(config.root, own)
            else:
                check_apart(config.root, own)
        except RootOverlap as exc:
            state = "" if config.active else ", disabled"
            raise RootOverlap(
                f"{config.name} ({config.root}{state}) overlaps safelight's own folders, "
                f"and nothing is written or deleted until they are apart: {exc}"
            ) from None


def check_own_folder(folder: OwnFolder) -> None:
    """Raise :class:`RootOverlap` if one of safelight's own folders is a system folder
    (``SAFELIGHT_PROXY_ROOT=/`` would make every library a part of the proxy root)."""
    path = folder.path
    if path in SYSTEM_FOLDERS or path in SYSTEM_TREES:
        raise RootOverlap(
            f"safelight's {folder.what} {path} is a system folder: set {folder.setting} to "
            "a folder of safelight's own"
        )
