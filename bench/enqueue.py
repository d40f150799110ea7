"""Benchmark 9b: bulk enqueue, safelight beside PgQueuer, in paired rounds.

    .venv/bin/python bench/enqueue.py [--items 18000] [--chunk 1000] [--rounds 6]

Each round, in turns (the order swaps from round to round), on a fresh database each:

- safelight: ``WorkStore.enqueue_many`` of ``--chunk`` no-op items a call, one
  statement a call (``items_enqueue``), keyless as PgQueuer's are;
- safelight-keyed: the same with a distinct dedup key on every item (the ``ON
  CONFLICT`` path: what a crawl's fan-out pays);
- PgQueuer 1.6: ``Queries.enqueue`` of lists, ``--chunk`` a call, on asyncpg
  (bench/peer_worker.py, in bench/.venv-peers).

Each timing is taken inside its own process around the calls alone (no start-up, no
connect). The figure of the issue's target is the median over the rounds of the
ratio safelight / PgQueuer of one round: a ratio of two runs made a minute apart on
one machine, so a load that comes and goes moves both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import bench_database, peers_python, print_table, spread, versions, write_result

from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.handlers import KIND_SPECS
from safelight.settings import Settings
from safelight.work.store import WorkStore

BENCH = Path(__file__).resolve().parent
QUEUES = ("safelight", "safelight-keyed", "pgqueuer")


async def safelight_seconds(url: str, items: int, chunk: int, keyed: bool) -> float:
    pool = await open_pool(url, min_size=1, max_size=1)
    try:
        store = WorkStore(pool, SystemClock(), KIND_SPECS, max_stalls=Settings().max_stalls)
        calls = []
        for first in range(0, items, chunk):
            n = min(chunk, items - first)
            keys = [f"bench-{first + i}" for i in range(n)] if keyed else None
            calls.append(([{} for _ in range(n)], keys))
        start = time.perf_counter()
        for payloads, keys in calls:
            await store.enqueue_many("noop", payloads, dedup_keys=keys)
        return time.perf_counter() - start
    finally:
        await pool.close()


def pgqueuer_seconds(url: str, items: int) -> float:
    def peer(*args: str) -> str:
        argv = [peers_python(), str(BENCH / "peer_worker.py"), *args]
        return subprocess.run(argv, check=True, capture_output=True, text=True).stdout

    peer("setup", "pgqueuer", url)
    return float(json.loads(peer("enqueue", "pgqueuer", url, str(items), "bulk"))["seconds"])


def one_run(queue: str, items: int, chunk: int) -> float:
    """Items a second of one enqueue of ``items`` on a fresh database."""
    with bench_database(f"enq_{queue.replace('-', '_')}", migrated=queue != "pgqueuer") as url:
        if queue == "pgqueuer":
            if chunk != 1000:
                raise SystemExit("bench/peer_worker.py enqueues PgQueuer 1,000 a call")
            seconds = pgqueuer_seconds(url, items)
        else:
            seconds = asyncio.run(safelight_seconds(url, items, chunk, queue == "safelight-keyed"))
    return items / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=18_000)
    parser.add_argument("--chunk", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    rates: dict[str, list[float]] = {q: [] for q in QUEUES}
    for r in range(args.rounds):
        order = QUEUES if r % 2 == 0 else tuple(reversed(QUEUES))
        for queue in order:
            rates[queue].append(one_run(queue, args.items, args.chunk))
        line = ", ".join(f"{q} {rates[q][-1]:,.0f}/s" for q in QUEUES)
        print(f"round {r + 1}: {line}", flush=True)
    ratios = {
        q: [s / p for s, p in zip(rates[q], rates["pgqueuer"], strict=True)]
        for q in QUEUES
        if q != "pgqueuer"
    }
    out: dict[str, Any] = {
        "versions": versions({"pgqueuer": "1.6.0"}),
        "settings": vars(args),
        "items_per_second": rates,
        "ratio_to_pgqueuer": ratios,
    }
    write_result("enqueue", out)
    print_table(
        ["queue", "items/s, median [min..max]", "vs PgQueuer, median of the rounds' ratios"],
        [
            (q, spread(rates[q]), f"{statistics.median(ratios[q]):.2f}x" if q in ratios else "")
            for q in QUEUES
        ],
    )


if __name__ == "__main__":
    main()
