"""Benchmark: the Worker process's CPU per no-op item, without a database.

    .venv/bin/python bench/engine_cpu.py [--items 20000] [--rounds 5] [--workers 10]
                                         [--log-level warning] [--src PATH] [--profile FILE]

The engine of one Worker process as ``safelight worker --concurrency N --until-idle``
builds it (``safelight.app.build_engine``: the Workers, the executor, the noop handler,
the lifecycle lines and the Prometheus metrics), over a store whose two statements
answer at once: ``WorkStore``'s own client side runs (its batchers, the rows made into
items), only the two statements' SQL round trips are replaced (``_claim_once`` hands out
the next items, ``_finish_batch`` says every outcome applied). What it measures is the
CPU the engine spends around an item, the part of a drain's Worker CPU that is not
psycopg's (docs/benchmarks.md, sections 9, 10 and 18).

Each round drains ``--items`` items on a fresh engine and reads the process's CPU
(user + system) around the drain alone; the median and the spread of the rounds are
printed in µs per item. ``--src`` runs another tree's ``src/`` (a before and after on
the same machine: run it twice, once with ``--src /work/main/src``). ``--profile FILE``
writes a cProfile of one extra round (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument("--src", help="another tree's src/ to run (default: this tree's)")
    parser.add_argument("--profile", help="write a cProfile of one more round here")
    parser.add_argument(
        "--compare",
        metavar="SRC",
        help="alternate rounds of this tree and of SRC, each in a process of its own",
    )
    return parser.parse_args()


ARGS = _parse()
sys.path.insert(0, ARGS.src or str(Path(__file__).resolve().parent.parent / "src"))

from safelight.app import WorkerOptions, build_engine  # noqa: E402
from safelight.core.clock import SystemClock  # noqa: E402
from safelight.logs import configure_logging  # noqa: E402
from safelight.settings import Settings  # noqa: E402
from safelight.work import store as store_module  # noqa: E402
from safelight.work.store import WorkStore  # noqa: E402


class _Queue:
    """The items of one round, handed out by the claims in order."""

    def __init__(self, items: int) -> None:
        self.left = items
        self.next_id = 1
        self.finished = 0
        now = datetime.now(UTC)
        self.row: dict[str, Any] = {
            "kind": "noop",
            "storage_config_id": None,
            "dedup_key": None,
            "payload": {},
            "status": "running",
            "requested_at": now,
            "attempt": 1,
            "stalls": 0,
            "started_at": now,
            "heartbeat_at": now,
            "lease_expires_at": now,
            "finished_at": None,
            "cancel_requested": False,
            "error": None,
            "result": None,
            "retries": 0,
            "not_before": None,
            "progress": None,
        }


QUEUE = _Queue(0)


async def _claim_once(
    self: WorkStore, worker_ids: Any, kinds: str, owner: str | None, lease_seconds: float
) -> dict[int, Any]:
    taken = {}
    for nth, worker_id in enumerate(worker_ids):
        if not QUEUE.left:
            break
        QUEUE.left -= 1
        row = {**QUEUE.row, "id": QUEUE.next_id, "worker_id": worker_id, "nth": nth + 1}
        QUEUE.next_id += 1
        taken[nth] = store_module._item_from_row(row)
    return taken


async def _finish_batch(self: WorkStore, endings: Any) -> list[bool]:
    QUEUE.finished += len(endings)
    return [True] * len(endings)


async def _pending_count(self: WorkStore, kinds: Any, owner: str | None = None) -> int:
    return QUEUE.left


WorkStore._claim_once = _claim_once  # type: ignore[method-assign]
WorkStore._finish_batch = _finish_batch  # type: ignore[method-assign]
WorkStore.pending_count = _pending_count  # type: ignore[method-assign]


async def one_round(items: int, workers: int, home: Path) -> float:
    """CPU seconds of draining ``items`` no-op items with ``workers`` Workers."""
    global QUEUE
    QUEUE = _Queue(items)
    settings = Settings(home=home, decode_processes=0)
    database = SimpleNamespace(url="postgresql://unused", pool=None, embedded_handle=None)
    options = WorkerOptions(concurrency=workers, until_idle=True)
    engine = build_engine(settings, database, SystemClock(), options)  # type: ignore[arg-type]
    shutdown = asyncio.Event()
    started = time.process_time()
    await asyncio.gather(*(worker.run(shutdown) for worker in engine.workers))
    cpu = time.process_time() - started
    engine.lifecycle.flush()
    await engine.close()
    if QUEUE.finished != items:
        raise RuntimeError(f"{QUEUE.finished} of {items} items finished")
    return cpu


def compare(other: str) -> None:
    """Rounds of this tree and of ``other`` in turns, so that both see the same load."""
    here = str(Path(__file__).resolve().parent.parent / "src")
    figures: dict[str, list[float]] = {here: [], other: []}
    for _ in range(ARGS.rounds):
        for src in figures:
            argv = [sys.executable, __file__, "--rounds", "1", "--src", src]
            argv += ["--items", str(ARGS.items), "--workers", str(ARGS.workers)]
            argv += ["--log-level", ARGS.log_level]
            out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
            figures[src].append(float(out.split(": ")[-1].split(" ")[0]))
    for src, per_item in figures.items():
        print(
            f"{src}: {statistics.median(per_item):.1f} µs CPU per item "
            f"[{min(per_item):.1f}..{max(per_item):.1f}] ({ARGS.rounds} rounds in turns)"
        )


def main() -> None:
    if ARGS.compare:
        compare(ARGS.compare)
        return
    configure_logging("text", ARGS.log_level)
    with tempfile.TemporaryDirectory() as home:
        asyncio.run(one_round(1000, ARGS.workers, Path(home)))  # warm-up
        per_item = []
        for _ in range(ARGS.rounds):
            cpu = asyncio.run(one_round(ARGS.items, ARGS.workers, Path(home)))
            per_item.append(cpu / ARGS.items * 1e6)
        if ARGS.profile:
            profiler = cProfile.Profile(time.process_time)
            profiler.runcall(asyncio.run, one_round(ARGS.items, ARGS.workers, Path(home)))
            profiler.dump_stats(ARGS.profile)
    print(
        f"{ARGS.workers} Workers, {ARGS.items} no-op items, {ARGS.rounds} rounds, "
        f"log level {ARGS.log_level}, src {ARGS.src or 'this tree'}: "
        f"{statistics.median(per_item):.1f} µs CPU per item "
        f"[{min(per_item):.1f}..{max(per_item):.1f}]"
    )


if __name__ == "__main__":
    main()
