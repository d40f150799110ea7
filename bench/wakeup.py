"""Benchmark 2: wake-up latency of real Worker processes (the poll alone would be 5 s).

    .venv/bin/python bench/wakeup.py [--samples 200] [--workers 2] [--concurrency 2]

Starts ``--workers`` Worker processes (``safelight worker --concurrency N``, default
settings: poll 5 s, so anything faster than that is the LISTEN/NOTIFY wake-up) on a
database of its own, lets them drain what their schedulers enqueue at start, then:

- idle: enqueue one ``noop`` item on an idle system and take ``time.time()`` right
  after the enqueue's commit returns; the latency is the attempt's ``started_at`` (the
  database's clock in the claim, right before the handler starts) minus that. The Worker
  often claims before the client has even seen its commit's answer, so this can be
  negative: it is a lower bound. ``idle_from_enqueue_call`` counts from before the
  enqueue call instead (its own round trip and commit included): an upper bound. The
  next sample waits until the item has finished and 50-150 ms more, so every Worker is
  asleep again.
- handoff: enqueue item A (``noop`` sleeping 30 ms) and item B of the same storage
  config; B cannot start while A runs. The latency is B's ``started_at`` minus A's
  ``finished_at``, both the database's clock (ADR 0015). Which slot took B is recorded: the one that
  ran A (its own loop claims again at once), a sibling in its process (woken in
  process), or another process (woken by NOTIFY).

Both clocks are this machine's wall clock (``datetime.now(UTC)`` in the Workers).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    Processes,
    bench_database,
    print_table,
    summary,
    versions,
    worker_argv,
    worker_env,
    write_result,
)

from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.library.catalogue.configs import StorageConfigs
from safelight.settings import Settings
from safelight.work.store import WorkStore

ALL_KINDS = [spec.name for spec in KIND_SPECS]
DEADLINE_SECONDS = 30.0  # one sample that takes longer than this fails the run


async def wait_finished(store: WorkStore, item_id: int) -> Any:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        item = await store.get(item_id)
        if item is not None and item.finished_at is not None:
            return item
        await asyncio.sleep(0.005)
    raise SystemExit(f"item {item_id} did not finish within {DEADLINE_SECONDS:g} s")


async def wait_drained(store: WorkStore, quiet_seconds: float = 1.0) -> None:
    """Until nothing is queued or running for ``quiet_seconds`` (the schedulers' items)."""
    deadline = time.monotonic() + 120
    quiet_since = None
    while time.monotonic() < deadline:
        if await store.pending_count(ALL_KINDS) == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= quiet_seconds:
                return
        else:
            quiet_since = None
        await asyncio.sleep(0.05)
    raise SystemExit("the Workers never went idle")


def slot_relation(a_worker: str, b_worker: str) -> str:
    if a_worker == b_worker:
        return "same slot"
    if a_worker.split("/")[0] == b_worker.split("/")[0]:
        return "same process"
    return "other process"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with (
        bench_database("wakeup") as url,
        tempfile.TemporaryDirectory(prefix="safelight-bench-") as home,
        Processes() as procs,
    ):
        photos = Path(home) / "photos"
        photos.mkdir()
        pool = await open_pool(url, min_size=1, max_size=4)
        try:
            clock = SystemClock()
            store = WorkStore(pool, clock, KIND_SPECS, max_stalls=Settings().max_stalls)
            config = (await StorageConfigs(pool, clock).add("bench", photos)).config.id
            for n in range(args.workers):
                procs.start(
                    worker_argv(args.concurrency, until_idle=False, name=f"w{n}"),
                    env=worker_env(url, Path(home)),
                )
            await asyncio.sleep(1.0)
            await wait_drained(store)

            idle: list[float] = []
            idle_upper: list[float] = []
            for _ in range(args.samples):
                await asyncio.sleep(random.uniform(0.05, 0.15))
                sent = time.time()
                item_id = await store.enqueue("noop")
                committed = time.time()
                item = await wait_finished(store, item_id)
                idle.append((item.started_at.timestamp() - committed) * 1000)
                idle_upper.append((item.started_at.timestamp() - sent) * 1000)

            handoff: list[float] = []
            relations: dict[str, int] = {}
            for _ in range(args.samples):
                await asyncio.sleep(random.uniform(0.05, 0.15))
                a_id = await store.enqueue("noop", config_id=config, payload={"seconds": 0.03})
                b_id = await store.enqueue("noop", config_id=config)
                b = await wait_finished(store, b_id)
                a = await wait_finished(store, a_id)
                if b.started_at < a.finished_at:
                    raise SystemExit(f"items {a_id} and {b_id} of one config overlapped")
                handoff.append((b.started_at - a.finished_at).total_seconds() * 1000)
                relation = slot_relation(a.worker_id, b.worker_id)
                relations[relation] = relations.get(relation, 0) + 1
        finally:
            await pool.close()
    return {
        "idle": summary(idle),
        "idle_from_enqueue_call": summary(idle_upper),
        "handoff": summary(handoff),
        "handoff_taken_by": relations,
        "samples_ms": {"idle": idle, "idle_from_enqueue_call": idle_upper, "handoff": handoff},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2, help="Worker processes")
    parser.add_argument("--concurrency", type=int, default=2, help="Workers per process")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    result["versions"] = versions()
    result["settings"] = vars(args)
    write_result("wakeup", result)
    rows = []
    for name in ("idle", "idle_from_enqueue_call", "handoff"):
        s = result[name]
        rows.append(
            (
                name,
                s["n"],
                f"{s['median']:.2f}",
                f"{s['p95']:.2f}",
                f"{s['p99']:.2f}",
                f"{s['max']:.2f}",
            )
        )
    print_table(("case", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"), rows)
    print("handoff taken by:", result["handoff_taken_by"])


if __name__ == "__main__":
    main()
