"""Benchmark: how long a CLI command takes from exec to exit (issue #31, item 6).

    .venv/bin/python bench/startup.py [--rounds 7] [--before REV]

Runs ``safelight --version``, ``safelight --help`` and ``safelight status`` (on a
migrated database of its own, so no migration is applied during the measure) as fresh
processes, ``--rounds`` times each, interleaved, and reports the median and the range
of the wall time, beside each process's user+system CPU time. Targets: ``--version``
and ``--help`` under 0.3 s, ``status`` under 0.8 s (ADR 0063). ``--before REV``: the
same commands from a worktree of REV in the same rounds (``git worktree add`` into a
temporary folder, run with this ``.venv``'s interpreter and that tree on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_database, print_table, versions, write_result

REPO = Path(__file__).resolve().parent.parent
COMMANDS: dict[str, list[str]] = {
    "--version": ["--version"],
    "--help": ["--help"],
    "status": ["status"],
}
TARGETS = {"--version": 0.3, "--help": 0.3, "status": 0.8}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, timeout=60)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", metavar="REV", default=None)
    args = parser.parse_args()

    trees = {"this": REPO / "src"}
    scratch = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        if args.before:
            subprocess.run(
                [
                    "git",
                    "-C",
                    str(REPO),
                    "worktree",
                    "add",
                    "--detach",
                    str(scratch / "before"),
                    args.before,
                ],
                check=True,
                capture_output=True,
            )
            trees["before"] = scratch / "before" / "src"
        with bench_database("startup") as url:
            base = {k: v for k, v in os.environ.items() if not k.startswith("SAFELIGHT_")}
            base |= {"SAFELIGHT_DATABASE_URL": url, "SAFELIGHT_HOME": str(scratch / "home")}
            walls: dict[tuple[str, str], list[float]] = {}
            cpus: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.rounds):
                for tree, src in trees.items():
                    env = base | {"PYTHONPATH": str(src)}
                    for name, command in COMMANDS.items():
                        wall, cpu = timed([sys.executable, "-m", "safelight", *command], env)
                        walls.setdefault((tree, name), []).append(wall)
                        cpus.setdefault((tree, name), []).append(cpu)
    finally:
        if args.before:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(scratch / "before")],
                check=False,
                capture_output=True,
            )
        shutil.rmtree(scratch, ignore_errors=True)

    rows: list[list[object]] = []
    result: dict[str, Any] = {
        "versions": versions(),
        "rounds": args.rounds,
        "load": os.getloadavg(),
    }
    for (tree, name), values in walls.items():
        median = statistics.median(values)
        cpu = statistics.median(cpus[(tree, name)])
        met = "yes" if median < TARGETS[name] else "no"
        rows.append(
            [
                tree,
                f"safelight {name}",
                f"{median:.3f} s",
                f"{min(values):.3f}..{max(values):.3f}",
                f"{cpu:.3f} s",
                f"< {TARGETS[name]} s",
                met if tree == "this" else "-",
            ]
        )
        result[f"{tree} {name}"] = {"wall": values, "cpu": cpus[(tree, name)]}
    write_result("startup", result)
    print_table(["tree", "command", "median wall", "range", "median CPU", "target", "met"], rows)


if __name__ == "__main__":
    main()
