"""Benchmark 3: no-op throughput of safelight beside procrastinate and PgQueuer.

    .venv/bin/python bench/throughput.py [--items 20000] [--rounds 3] [--processes 1,2]
                                         [--queues safelight,procrastinate,...]

Per run: a fresh database; 2,000 items enqueued one by one and the rest in bulk (both
timed: the enqueue rates); VACUUM ANALYZE; then ``P`` worker processes drain the
queue and exit. Throughput is items / (last finish - first start), both read from the
queue's own tables afterwards:

- safelight: ``safelight worker --concurrency 4 --until-idle``; ``work_items``
  started_at / finished_at (the database's clock in the claim and in the outcome);
- procrastinate 3.10.0: ``run_worker_async(concurrency=4, wait=False)``;
  ``procrastinate_events`` started / succeeded (``now()`` of those transactions);
- PgQueuer 1.6.0, 4 in flight: ``max_concurrent_tasks=4`` (which needs
  ``batch_size`` <= 2, so 2), drain mode, asyncpg; ``pgqueuer_log`` picked /
  successful (a completion's log row is written when PgQueuer flushes its buffer, at
  most a batch later);
- PgQueuer 1.6.0 with its defaults (``batch_size=10``, no cap on jobs in flight): the
  stretch.

Every queue does the same no-op (an ``async def`` that returns), on the same server,
in the same run; the order of the queues rotates from round to round. The wall time
from starting the processes to the last one's exit (Python start-up included) is
recorded too.

The CPU: the worker processes' (user + system, from start to exit) and the server's (the
database's backends, sampled: ``common.ServerCpu``). Right after the drain the same
processes run again on the drained queue, and what they cost (start-up and exit alone)
is taken out of the drain's CPU per item. The ceiling is what this machine's cores
could drain at that CPU an item with every core busy all the time: cores / (worker +
server CPU an item), the most any pipelining of the same work could reach.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    RESULTS,
    Processes,
    ServerCpu,
    before_argument,
    bench_database,
    peers_python,
    print_table,
    spread,
    versions,
    worker_argv,
    worker_env,
    write_result,
)

from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.settings import Settings
from safelight.work.store import WorkStore

BENCH = Path(__file__).resolve().parent
SINGLE_ITEMS = 2000
BULK_CHUNK = 1000
RUN_TIMEOUT_SECONDS = 600
IN_FLIGHT = 4
CORES = os.cpu_count() or 1

# label -> (queue, concurrency argument, batch size)
QUEUES: dict[str, tuple[str, int, int]] = {
    "safelight": ("safelight", IN_FLIGHT, 0),
    # As many Workers per process as PgQueuer's default batch takes jobs at a time.
    "safelight-10": ("safelight", 10, 0),
    # The same Workers run from another tree's src/ (--before): a before and after in
    # one run. Its items are enqueued by this tree's code, on this tree's schema.
    "safelight-before": ("safelight", IN_FLIGHT, 0),
    "safelight-10-before": ("safelight", 10, 0),
    "procrastinate": ("procrastinate", IN_FLIGHT, 0),
    "pgqueuer": ("pgqueuer", IN_FLIGHT, 2),
    "pgqueuer-defaults": ("pgqueuer", 0, 10),
}

SPAN_SQL = {
    "safelight": """
        SELECT min(started_at), max(finished_at), count(*) FILTER (WHERE status = 'succeeded')
        FROM work_items WHERE kind = 'noop'""",
    "procrastinate": """
        SELECT min(at) FILTER (WHERE type = 'started'), max(at) FILTER (WHERE type = 'succeeded'),
               count(*) FILTER (WHERE type = 'succeeded')
        FROM procrastinate_events""",
    "pgqueuer": """
        SELECT min(created) FILTER (WHERE status = 'picked'),
               max(created) FILTER (WHERE status = 'successful'),
               count(*) FILTER (WHERE status = 'successful')
        FROM pgqueuer_log""",
}


async def safelight_enqueue(url: str, items: int) -> tuple[float, float]:
    """Seconds for SINGLE_ITEMS one by one, and for the rest in bulk (enqueue_many)."""
    pool = await open_pool(url, min_size=1, max_size=2)
    try:
        store = WorkStore(pool, SystemClock(), KIND_SPECS, max_stalls=Settings().max_stalls)
        start = time.perf_counter()
        for _ in range(SINGLE_ITEMS):
            await store.enqueue("noop")
        single = time.perf_counter() - start
        start = time.perf_counter()
        for first in range(SINGLE_ITEMS, items, BULK_CHUNK):
            n = min(BULK_CHUNK, items - first)
            await store.enqueue_many("noop", [{} for _ in range(n)])
        return single, time.perf_counter() - start
    finally:
        await pool.close()


def _children_cpu() -> float:
    """User + system CPU seconds of the children this process has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peer(*args: str) -> str:
    out = subprocess.run(
        [peers_python(), str(BENCH / "peer_worker.py"), *args],
        check=True,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_SECONDS,
    )
    return out.stdout


def peer_enqueue(queue: str, url: str, items: int) -> tuple[float, float]:
    import json

    single = json.loads(peer("enqueue", queue, url, str(SINGLE_ITEMS), "single"))["seconds"]
    bulk = json.loads(peer("enqueue", queue, url, str(items - SINGLE_ITEMS), "bulk"))["seconds"]
    return float(single), float(bulk)


def _argv_env(
    label: str, n: int, url: str, home: Path, profile: str | None, before: Path | None
) -> tuple[list[str], dict[str, str] | None]:
    """The command line and environment of ``label``'s worker process number ``n``."""
    queue, concurrency, batch = QUEUES[label]
    if queue != "safelight":
        argv = [peers_python(), str(BENCH / "peer_worker.py"), "work", queue, url]
        return [*argv, str(concurrency), str(batch)], None
    argv = worker_argv(concurrency, until_idle=True, name=f"w{n}")
    src = None
    if label.endswith("-before"):
        if before is None:
            raise SystemExit(f"{label} needs --before SRC")
        src = before
    env = worker_env(url, home, src=src)
    if profile:
        spy = str(Path(peers_python()).with_name("py-spy"))
        out = RESULTS / f"profile-{label}-{n}.{profile}"
        argv = [spy, "record", "-r", "200", "-f", profile, "-o", str(out), "--", *argv]
    return argv, env


def _run_processes(
    label: str,
    processes: int,
    url: str,
    home: Path,
    profile: str | None = None,
    before: Path | None = None,
) -> float:
    """Start ``label``'s worker processes, wait for them all; their CPU seconds."""
    cpu_before = _children_cpu()
    with Processes() as procs:
        children = [
            procs.start(argv, env=env)
            for argv, env in (
                _argv_env(label, n, url, home, profile, before) for n in range(processes)
            )
        ]
        for child in children:
            try:
                child.wait(RUN_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"{label}: not drained in {RUN_TIMEOUT_SECONDS} s") from None
            if child.returncode != 0:
                raise SystemExit(f"{label}: a worker process exited with {child.returncode}")
    # Every child waited for since cpu_before is a worker process of this call.
    return _children_cpu() - cpu_before


def one_run(
    label: str,
    processes: int,
    items: int,
    home: Path,
    profile: str | None = None,
    synchronous_commit: str = "on",
    before: Path | None = None,
) -> dict[str, Any]:
    queue = QUEUES[label][0]
    with bench_database(f"tp_{label.replace('-', '_')}", migrated=queue == "safelight") as url:
        if queue == "safelight":
            single, bulk = asyncio.run(safelight_enqueue(url, items))
        else:
            peer("setup", queue, url)
            single, bulk = peer_enqueue(queue, url, items)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            if synchronous_commit != "on":
                # Diagnosis only (every queue alike): how much of the time is WAL flushes.
                name = conn.info.dbname
                conn.execute(
                    f'ALTER DATABASE "{name}" SET synchronous_commit = {synchronous_commit}'
                )
        started = time.time()
        with ServerCpu(psycopg.conninfo.conninfo_to_dict(url)["dbname"]) as server:
            worker_cpu = _run_processes(label, processes, url, home, profile, before)
        wall = time.time() - started
        # The same processes again on the drained queue: their start-up and exit alone
        # (imports, connections, the schema's check), which the drain's CPU includes and
        # its rate does not (the rate runs from the first item's start).
        idle_cpu = _run_processes(label, processes, url, home, None, before)
        with psycopg.connect(url) as conn:
            row = conn.execute(SPAN_SQL[queue]).fetchone()
        assert row is not None
        first, last, done = row
        if done != items:
            raise SystemExit(f"{label}: {done} of {items} items succeeded")
        span = (last - first).total_seconds()
    worker = (worker_cpu - idle_cpu) * 1000 / items
    server_ms = None if server.seconds is None else server.seconds * 1000 / items
    return {
        "items_per_second": items / span,
        "span_seconds": span,
        "wall_seconds": wall,
        "worker_cpu_ms_per_item": worker_cpu * 1000 / items,
        "worker_start_up_cpu_seconds": idle_cpu,
        # The drain's own CPU: the processes' start-up and exit taken out.
        "worker_drain_cpu_ms_per_item": worker,
        # The drain's backends on the server (None: the server is not on this machine).
        "server_cpu_ms_per_item": server_ms,
        # The most this machine's cores could drain at this CPU an item, every core busy.
        "ceiling_per_second": None if server_ms is None else CORES * 1000 / (worker + server_ms),
        "enqueue_single_per_second": SINGLE_ITEMS / single,
        "enqueue_bulk_per_second": (items - SINGLE_ITEMS) / bulk,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--processes", default="1,2")
    parser.add_argument(
        "--queues",
        default="safelight,procrastinate,pgqueuer,pgqueuer-defaults",
        help=f"of {', '.join(QUEUES)}",
    )
    parser.add_argument(
        "--synchronous-commit",
        choices=("on", "off"),
        default="on",
        help="off: a diagnosis of how much WAL flushes cost (for every queue alike)",
    )
    before_argument(parser, "the safelight-before and safelight-10-before queues")
    parser.add_argument(
        "--profile",
        choices=("speedscope", "flamegraph", "raw"),
        help="record the safelight Worker processes with py-spy into bench/results/",
    )
    args = parser.parse_args()
    labels = args.queues.split(",")
    counts = [int(p) for p in args.processes.split(",")]
    runs: dict[str, dict[int, list[dict[str, Any]]]] = {q: {p: [] for p in counts} for q in labels}
    with tempfile.TemporaryDirectory(prefix="safelight-bench-") as home:
        for r in range(args.rounds):
            order = labels[r % len(labels) :] + labels[: r % len(labels)]
            for p in counts:
                for label in order:
                    result = one_run(
                        label,
                        p,
                        args.items,
                        Path(home),
                        args.profile,
                        args.synchronous_commit,
                        args.before,
                    )
                    runs[label][p].append(result)
                    print(
                        f"round {r + 1}, {p} process(es), {label}: "
                        f"{result['items_per_second']:.0f} items/s",
                        flush=True,
                    )
    out = {
        "versions": versions({"procrastinate": "3.10.0", "pgqueuer": "1.6.0"}),
        "settings": vars(args),
        "runs": runs,
    }
    write_result("throughput", out)
    report(out)


# What each safelight label is compared with: the faster of the peers at equal items in
# flight, or PgQueuer at its defaults for 10 Workers a process.
COMPARED_WITH = {
    "safelight": ("procrastinate", "pgqueuer"),
    "safelight-10": ("pgqueuer-defaults",),
    "safelight-before": ("procrastinate", "pgqueuer"),
    "safelight-10-before": ("pgqueuer-defaults",),
}


def report(out: dict[str, Any]) -> None:
    runs = out["runs"]
    rows = []
    for label, by_p in runs.items():
        for p, results in by_p.items():
            rates = [r["items_per_second"] for r in results]
            peers = [
                statistics.median(x["items_per_second"] for x in runs[q][p])
                for q in COMPARED_WITH.get(label, ())
                if q in runs and runs[q][p]
            ]
            ratio = f"{statistics.median(rates) / max(peers):.2f}x" if peers else ""
            rows.append(
                (
                    label,
                    p,
                    spread(rates),
                    ratio,
                    spread([r["wall_seconds"] for r in results]),
                    spread([r["worker_start_up_cpu_seconds"] for r in results]),
                    spread([r["worker_drain_cpu_ms_per_item"] for r in results]),
                    spread([r.get("server_cpu_ms_per_item") or float("nan") for r in results]),
                    spread([r.get("ceiling_per_second") or float("nan") for r in results]),
                    spread([r["enqueue_single_per_second"] for r in results]),
                    spread([r["enqueue_bulk_per_second"] for r in results]),
                )
            )
    print_table(
        (
            "queue",
            "processes",
            "items/s, median [min..max]",
            "vs its peer",
            "wall s",
            "worker start-up CPU s",
            "worker CPU ms/item, start-up out",
            "server CPU ms/item",
            f"ceiling items/s on {CORES} cores",
            "enqueue one by one /s",
            "enqueue bulk /s",
        ),
        rows,
    )


if __name__ == "__main__":
    main()
