"""Benchmark 10: tightening a proxy root an earlier release left open (ADR 0043).

    .venv/bin/python bench/private_tree.py [--files 20000] [--rounds 3] [--group NAME]

Per round: a proxy root of the real layout (``<config>/<hash[:2]>/<hash>/`` with a
thumbnail and a preview in each asset's folder, ``--files`` files in all, over two
configs) is written in a temporary folder of ``/var/tmp``, with every folder 0755 and
every file 0644, as releases before issue #28 made them. Then timed, each on a cold
start of the walk (the tree's metadata is in the page cache, as at a Worker's start
right after the last one stopped):

- ``tighten``: ``library.proxymodes.tighten_proxy_root`` with the settings' modes (the
  walk of the layout's names, a chmod of each, the root last);
- ``again``: the same call on the tightened root (its own ``lstat`` only: what every
  later start costs);
- ``bare walk``: ``os.walk`` with an ``lstat`` of every entry, changing nothing, for scale.

No database: the tightening touches only files.
"""

from __future__ import annotations

import argparse
import grp
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import print_table, versions, write_result

from safelight.core.filemodes import FileModes
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.library.proxystore.proxymodes import tighten_proxy_root


def make_tree(root: Path, files: int) -> tuple[int, int]:
    """An open proxy root of ``files`` proxies; returns (folders, files) made."""
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    (root / PROXY_ROOT_MARKER).write_text("{}\n")
    configs = [uuid.UUID(int=n + 1) for n in range(2)]
    folders = 1
    made = 0
    seen: set[Path] = set()
    for number in range(files // 2):
        content_hash = f"{number * 2654435761 % 2**64:016x}"
        folder = root / str(configs[number % 2]) / content_hash[:2] / content_hash
        for parent in (folder.parent.parent, folder.parent, folder):
            if parent not in seen:
                parent.mkdir(mode=0o755, exist_ok=True)
                parent.chmod(0o755)
                seen.add(parent)
                folders += 1
        for name in (f"thumbnail.{number + 1}-1.jpg", f"full_preview.{number + 1}-1.jpg"):
            path = folder / name
            path.write_bytes(b"x")
            path.chmod(0o644)
            made += 1
    return folders, made


def bare_walk(root: Path) -> int:
    count = 0
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            os.lstat(os.path.join(folder, name))
            count += 1
    return count


def shown(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds < 0.001 else f"{seconds * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--group", help="a read group (default: none, modes 0700/0600)")
    args = parser.parse_args()
    gid = None if args.group is None else grp.getgrnam(args.group).gr_gid
    modes = FileModes.of_process(gid)

    timings: dict[str, list[float]] = {"tighten": [], "again": [], "bare walk": []}
    counts: tuple[int, int] = (0, 0)
    changed = 0
    for _ in range(args.rounds):
        scratch = Path(tempfile.mkdtemp(prefix="bench-private-", dir="/var/tmp"))
        try:
            root = scratch / "proxies"
            counts = make_tree(root, args.files)
            started = time.perf_counter()
            bare_walk(root)
            timings["bare walk"].append(time.perf_counter() - started)
            started = time.perf_counter()
            tightened = tighten_proxy_root(root, modes)
            timings["tighten"].append(time.perf_counter() - started)
            changed = sum(tightened.changed.values())
            started = time.perf_counter()
            again = tighten_proxy_root(root, modes)
            timings["again"].append(time.perf_counter() - started)
            assert not again, "a tightened root is walked again"
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    folders, files = counts
    rows = [
        [
            what,
            f"{folders:,} folders, {files:,} files",
            shown(statistics.median(values)),
            f"{shown(min(values))} to {shown(max(values))}",
        ]
        for what, values in timings.items()
    ]
    print_table(["step", "tree", "median", "range"], rows)
    print(f"entries changed by one tightening: {changed:,}")
    write_result(
        "private_tree",
        {
            "files": files,
            "folders": folders,
            "rounds": args.rounds,
            "group": args.group,
            "changed": changed,
            "seconds": timings,
            "versions": versions(),
        },
    )


if __name__ == "__main__":
    main()
