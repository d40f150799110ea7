"""Benchmark 2: wake-up latency of real Worker processes (the poll alone would be 5 s).

    .venv/bin/python bench/wakeup.py [--samples 200] [--workers 2] [--concurrency 2]
                                     [--before SRC]

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

``--before SRC``: a second set of Workers, as many, runs another tree's code (its
``src/``, as ``bench/throughput.py --before``) on a database, a home and a config of
its own, and the samples alternate between the two sets one by one (which goes first
alternates too), so both are measured under the same load. Each set is asleep while
the other is measured.

The storage config's folder lies beside the Workers' home, never inside it: ADR 0034
refuses a config inside safelight's own folders, and the Workers would not start. A
Worker process that exits stops the run with its exit code (its log is above).

The client's clock and the database's are one clock only with the server on this
machine (the default ``BENCH_DATABASE_URL``); the handoff uses the database's alone.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    Processes,
    before_argument,
    bench_database,
    print_table,
    summary,
    versions,
    worker_argv,
    worker_env,
    worker_source,
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
CASES = ("idle", "idle_from_enqueue_call", "handoff")


@dataclass
class Side:
    """One set of Worker processes, the code they run, and what they are measured on."""

    label: str
    code: str
    """The safelight package the Workers import."""
    pool: Any
    store: WorkStore
    config: Any
    children: list[subprocess.Popen[Any]]
    samples: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CASES})
    warmup: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CASES})
    taken_by: dict[str, int] = field(default_factory=dict)
    handoff_by: dict[str, list[float]] = field(default_factory=dict)
    """The handoff samples by which slot took B."""

    def check_alive(self) -> None:
        """Stop the run if a Worker process exited (a Worker that refuses to start, as
        for a config inside its home, would otherwise show as a sample that never ends)."""
        for child in self.children:
            code = child.poll()
            if code is not None:
                raise SystemExit(
                    f"{self.label}: Worker process {child.pid} exited with {code} "
                    "(its log is above)"
                )


async def wait_finished(side: Side, item_id: int) -> Any:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        item = await side.store.get(item_id)
        if item is not None and item.finished_at is not None:
            return item
        side.check_alive()
        await asyncio.sleep(0.005)
    raise SystemExit(f"{side.label}: item {item_id} did not finish within {DEADLINE_SECONDS:g} s")


async def wait_ready(side: Side, workers: int, quiet_seconds: float = 1.0) -> None:
    """Until the ``workers`` Workers wrote their presence (they are running: an empty
    queue says nothing of Workers still importing), and then nothing is queued or
    running for ``quiet_seconds`` (the schedulers' items)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        side.check_alive()
        async with side.pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) FROM workers")
            row = await cur.fetchone()
        if row is not None and row[0] >= workers:
            break
        await asyncio.sleep(0.05)
    quiet_since = None
    while time.monotonic() < deadline:
        side.check_alive()
        if await side.store.pending_count(ALL_KINDS) == 0:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since >= quiet_seconds:
                return
        else:
            quiet_since = None
        await asyncio.sleep(0.05)
    raise SystemExit(f"{side.label}: the Workers never went idle")


def slot_relation(a_worker: str, b_worker: str) -> str:
    if a_worker == b_worker:
        return "same slot"
    if a_worker.split("/")[0] == b_worker.split("/")[0]:
        return "same process"
    return "other process"


async def idle_sample(side: Side, into: dict[str, list[float]]) -> None:
    sent = time.time()
    item_id = await side.store.enqueue("noop")
    committed = time.time()
    item = await wait_finished(side, item_id)
    into["idle"].append((item.started_at.timestamp() - committed) * 1000)
    into["idle_from_enqueue_call"].append((item.started_at.timestamp() - sent) * 1000)


async def handoff_sample(side: Side, into: dict[str, list[float]]) -> None:
    store = side.store
    a_id = await store.enqueue("noop", config_id=side.config, payload={"seconds": 0.03})
    b_id = await store.enqueue("noop", config_id=side.config)
    b = await wait_finished(side, b_id)
    a = await wait_finished(side, a_id)
    if b.started_at < a.finished_at:
        raise SystemExit(f"{side.label}: items {a_id} and {b_id} of one config overlapped")
    latency = (b.started_at - a.finished_at).total_seconds() * 1000
    into["handoff"].append(latency)
    if into is side.samples:
        relation = slot_relation(a.worker_id, b.worker_id)
        side.taken_by[relation] = side.taken_by.get(relation, 0) + 1
        side.handoff_by.setdefault(relation, []).append(latency)


async def start_side(
    label: str,
    src: Path | None,
    args: argparse.Namespace,
    stack: contextlib.AsyncExitStack,
    procs: Processes,
) -> Side:
    """A database, a home and a config folder beside it, and the Worker processes."""
    url = stack.enter_context(bench_database("wakeup" if src is None else "wakeup_before"))
    scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="safelight-bench-")))
    # Siblings: a config's folder inside the home is refused (ADR 0034).
    home, photos = scratch / "home", scratch / "photos"
    home.mkdir()
    photos.mkdir()
    pool = await open_pool(url, min_size=1, max_size=4)
    stack.push_async_callback(pool.close)
    clock = SystemClock()
    store = WorkStore(pool, clock, KIND_SPECS, max_stalls=Settings().max_stalls)
    config = (await StorageConfigs(pool, clock).add("bench", photos)).config.id
    env = worker_env(url, home, src=src)
    children = [
        procs.start(worker_argv(args.concurrency, until_idle=False, name=f"w{n}"), env=env)
        for n in range(args.workers)
    ]
    # Stopped before the database is dropped under them (idempotent, once per side).
    stack.callback(procs.stop_all)
    return Side(label, worker_source(env), pool, store, config, children)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        procs = stack.enter_context(Processes())
        sides = [await start_side("this tree", None, args, stack, procs)]
        if args.before is not None:
            sides.append(await start_side("before", args.before, args, stack, procs))
        for side in sides:
            await wait_ready(side, args.workers * args.concurrency)

        # Sample by sample, the sides alternate, and so does which of them goes first.
        # The first --warmup samples of each case are kept apart: a Worker's first item
        # pays for what its process has not done yet (a first claim, a first handler).
        for sample in (idle_sample, handoff_sample):
            for n in range(args.warmup + args.samples):
                for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
                    await asyncio.sleep(random.uniform(0.05, 0.15))
                    await sample(side, side.warmup if n < args.warmup else side.samples)
        for side in sides:
            side.check_alive()
    return {
        side.label: {
            **{case: summary(side.samples[case]) for case in CASES},
            "handoff_taken_by": side.taken_by,
            "handoff_by_slot": {r: summary(v) for r, v in side.handoff_by.items()},
            "code": side.code,
            "samples_ms": side.samples,
            "warmup_ms": side.warmup,
        }
        for side in sides
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=200, help="of each case, each tree")
    parser.add_argument(
        "--warmup", type=int, default=5, help="samples of each case first, not counted"
    )
    parser.add_argument("--workers", type=int, default=2, help="Worker processes")
    parser.add_argument("--concurrency", type=int, default=2, help="Workers per process")
    before_argument(parser, "a second set of Worker processes, measured in turns,")
    args = parser.parse_args()
    result: dict[str, Any] = {"trees": asyncio.run(run(args))}
    result["versions"] = versions({"before": str(args.before)} if args.before else None)
    result["settings"] = vars(args)
    write_result("wakeup", result)
    rows = []
    for case in CASES:
        for label, found in result["trees"].items():
            s = found[case]
            rows.append(
                (
                    case,
                    label,
                    s["n"],
                    f"{s['median']:.2f}",
                    f"{s['p95']:.2f}",
                    f"{s['p99']:.2f}",
                    f"{s['max']:.2f}",
                )
            )
    print_table(("case", "tree", "n", "p50 ms", "p95 ms", "p99 ms", "max ms"), rows)
    for label, found in result["trees"].items():
        print(f"{label}: the Workers ran {found['code']}")
    slot_rows = [
        (label, relation, s["n"], f"{s['median']:.2f}", f"{s['p95']:.2f}", f"{s['max']:.2f}")
        for label, found in result["trees"].items()
        for relation, s in sorted(found["handoff_by_slot"].items())
    ]
    print("handoff by the slot that took B:")
    print_table(("tree", "taken by", "n", "p50 ms", "p95 ms", "max ms"), slot_rows)


if __name__ == "__main__":
    main()
