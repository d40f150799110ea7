"""Benchmark 10: the floor of a durable cycle, the statements with no Worker (issue #18).

    .venv/bin/python bench/cycle.py [--items 20000] [--rounds 3]

Issue #18 asks 10 safelight Workers a process to drain no-op items at 1.2x PgQueuer's
rate at its defaults, with every outcome durable before its Worker claims again. The
10 Workers of a process claim together and write together (group commit, ADR 0009), so
a drain is a chain of cycles of 10 items: one claim, the 10 runs, one outcome, each step
waiting for the one before. This measures what the cycle's statements cost on their
own: the rate a drain could not pass even if the Worker process cost nothing.

Each round, in turns (the order turns from round to round), each on a fresh database of
``--items`` no-op items, 10 items a cycle, on one connection, with no executor, no
handler and no Worker:

- ``safelight-two-commits``: ``items_claim`` for 10 Workers, then ``attempts_finish``
  of the 10, each its own transaction, prepared as the store prepares them: a Worker
  process's cycle today, without the process;
- ``safelight-one-commit``: the outcome of the 10 and the next claim in one transaction
  sent in one round trip (a pipeline: ``BEGIN``, ``attempts_finish``, ``items_claim``,
  ``COMMIT``): one WAL flush a cycle instead of two;
- ``safelight-overlapped``: the two statements as a Worker sends them since ADR 0069
  (issue #33): the outcome of the 10 and the next claim at the same time, each its own
  transaction on a connection of its own, the cycle ending when both have answered;
- ``bare-one-commit``: the least any durable queue can do, in one transaction a cycle:
  a table of ids and statuses, the claim an ``UPDATE`` of the 10 oldest queued rows
  (``FOR UPDATE SKIP LOCKED``), the outcome an ``UPDATE`` by id: no rule, no lease, no
  history, no fencing;
- ``pgqueuer-durable``: PgQueuer's own ``dequeue`` of 10 and its ``log_jobs`` of them,
  awaited before the next dequeue (bench/peer_worker.py ``cycle``, on asyncpg);

and, for reference, in the same round, the drains of bench/throughput.py:
``safelight-10`` (``safelight worker --concurrency 10``) and ``pgqueuer-defaults``
(PgQueuer's defaults, batch 10, its outcomes buffered and written later).

For each: items/s, and per cycle of 10 the wall time, the client's CPU (the loop's own
process) and the server's (the way's backends, ``common.ServerCpu``). The drains' CPU
includes their processes' start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg
import throughput
from common import (
    ServerCpu,
    bench_database,
    peers_python,
    print_table,
    spread,
    versions,
    write_result,
)
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from safelight.core.sql import text_array
from safelight.work.store import QUERIES, claim_query

BENCH = Path(__file__).resolve().parent
BATCH = 10
LOOPS = (
    "safelight-two-commits",
    "safelight-one-commit",
    "safelight-overlapped",
    "bare-one-commit",
)
PEER_LOOPS = ("pgqueuer-durable",)
DRAINS = ("safelight-10", "pgqueuer-defaults")
WAYS = LOOPS + PEER_LOOPS + DRAINS

_BARE_SCHEMA = """
CREATE TABLE bare_queue (id bigserial PRIMARY KEY, status text NOT NULL);
CREATE INDEX bare_queue_queued ON bare_queue (id) WHERE status = 'queued';
INSERT INTO bare_queue (status) SELECT 'queued' FROM generate_series(1, %(items)s);
"""
_BARE_CLAIM = """
UPDATE bare_queue SET status = 'running'
WHERE id IN (
    SELECT id FROM bare_queue WHERE status = 'queued' ORDER BY id LIMIT 10
    FOR UPDATE SKIP LOCKED
)
RETURNING id
"""
_BARE_FINISH = "UPDATE bare_queue SET status = 'done' WHERE id = ANY(%(ids)s)"


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _SafelightCycle:
    """items_claim and attempts_finish as WorkStore sends them, for 10 Workers."""

    def __init__(self) -> None:
        self.claim = claim_query(BATCH)
        self.claim_params = {
            "worker_ids": text_array([f"bench/{n}" for n in range(BATCH)]),
            "kinds": text_array(["noop"]),
            "owner": None,
            "lease_seconds": 30.0,
            "now": None,
        }

    @staticmethod
    def finish_params(rows: list[dict[str, Any]]) -> dict[str, Any]:
        endings = [
            {
                "id": r["id"],
                "attempt": r["attempt"],
                "status": "succeeded",
                "result": None,
                "error": None,
            }
            for r in rows
        ]
        return {"endings": Jsonb(endings), "now": None}


async def _claim(conn: psycopg.AsyncConnection[Any], sql: str, params: Any) -> list[Any]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(sql, params)
    return await cur.fetchall()


async def _loop(way: str, url: str) -> dict[str, float]:
    """One way's loop on one autocommit connection: seconds, CPU seconds, cycles, items."""
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    # The outcomes' own connection, for the overlapped way (a pool's second one).
    other = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        s = _SafelightCycle()
        if way == "bare-one-commit":
            claim, claim_params, finish = _BARE_CLAIM, None, _BARE_FINISH
        else:
            claim, claim_params, finish = s.claim, s.claim_params, QUERIES["attempts_finish"]
        rows = await _claim(conn, claim, claim_params)
        cycles = items = 0
        cpu = _cpu_seconds()
        start = time.perf_counter()
        while rows:
            cycles += 1
            items += len(rows)
            if way == "bare-one-commit":
                params: dict[str, Any] = {"ids": [r["id"] for r in rows]}
            else:
                params = s.finish_params(rows)
            if way == "safelight-overlapped":
                rows, _ = await asyncio.gather(
                    _claim(conn, claim, claim_params), other.execute(finish, params, prepare=False)
                )
                continue
            if way == "safelight-two-commits":
                # The store's own choice: the outcome is planned anew each time.
                await conn.execute(finish, params, prepare=False)
                rows = await _claim(conn, claim, claim_params)
                continue
            async with conn.pipeline():
                await conn.execute("BEGIN")
                await conn.execute(finish, params, prepare=way != "safelight-one-commit")
                cur = conn.cursor(row_factory=dict_row)
                await cur.execute(claim, claim_params)
                await conn.execute("COMMIT")
            rows = await cur.fetchall()
        seconds = time.perf_counter() - start
        cpu = _cpu_seconds() - cpu
        return {"seconds": seconds, "cpu_seconds": cpu, "cycles": cycles, "items": items}
    finally:
        await conn.close()
        await other.close()


def _one_loop(way: str, items: int) -> dict[str, float]:
    """A loop in a process of its own (its CPU alone), with the server's CPU beside it."""
    with bench_database(f"cycle_{way.replace('-', '_')}", migrated=True) as url:
        if way == "bare-one-commit":
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(_BARE_SCHEMA.replace("%(items)s", str(items)))
        elif way in LOOPS:
            asyncio.run(throughput.safelight_enqueue(url, items))
        else:
            throughput.peer("setup", "pgqueuer", url)
            throughput.peer_enqueue("pgqueuer", url, items)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        if way in LOOPS:
            argv = [sys.executable, __file__, "--loop", way, url]
        else:
            argv = [peers_python(), str(BENCH / "peer_worker.py"), "cycle", "pgqueuer", url]
            argv.append(str(BATCH))
        dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with ServerCpu(str(dbname)) as server:
            out = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=600)
        loop = json.loads(out.stdout)
    cycles = loop["cycles"]
    if loop["items"] != items:
        raise SystemExit(f"{way}: {loop['items']} of {items} items done")
    return {
        "items_per_second": items / loop["seconds"],
        "wall_ms_per_cycle": loop["seconds"] * 1000 / cycles,
        "client_cpu_ms_per_cycle": loop["cpu_seconds"] * 1000 / cycles,
        "server_cpu_ms_per_cycle": None
        if server.seconds is None
        else server.seconds * 1000 / cycles,
    }


def _one_drain(way: str, items: int, home: Path) -> dict[str, float]:
    run = throughput.one_run(way, 1, items, home)
    server = run["server_cpu_ms_per_item"]
    return {
        "items_per_second": run["items_per_second"],
        "wall_ms_per_cycle": BATCH * 1000 / run["items_per_second"],
        "client_cpu_ms_per_cycle": run["worker_cpu_ms_per_item"] * BATCH,
        "server_cpu_ms_per_cycle": None if server is None else server * BATCH,
    }


def report(out: dict[str, Any]) -> None:
    runs: dict[str, list[dict[str, float]]] = out["runs"]
    reference = statistics.median(r["items_per_second"] for r in runs["pgqueuer-defaults"])
    rows = []
    for way in WAYS:
        rs = runs[way]
        rate = statistics.median(r["items_per_second"] for r in rs)
        servers = [r["server_cpu_ms_per_cycle"] for r in rs]
        rows.append(
            [
                way,
                spread([r["items_per_second"] for r in rs]),
                f"{rate / reference:.2f}x",
                spread([r["wall_ms_per_cycle"] for r in rs]),
                spread([r["client_cpu_ms_per_cycle"] for r in rs]),
                "n/a" if None in servers else spread([s for s in servers if s is not None]),
            ]
        )
    print(
        f"1.2x PgQueuer's drain at its defaults: {1.2 * reference:.0f} items/s, a cycle of 10 "
        f"in {BATCH * 1000 / (1.2 * reference):.2f} ms"
    )
    print_table(
        [
            "way",
            "items/s, median [min..max]",
            "vs PgQueuer's drain",
            "wall ms a cycle of 10",
            "client CPU ms a cycle",
            "server CPU ms a cycle",
        ],
        rows,
    )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--loop":
        print(json.dumps(asyncio.run(_loop(sys.argv[2], sys.argv[3]))), flush=True)
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="safelight-bench-") as home:
        for r in range(args.rounds):
            for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
                if way in DRAINS:
                    result = _one_drain(way, args.items, Path(home))
                else:
                    result = _one_loop(way, args.items)
                runs[way].append(result)
                print(f"round {r + 1}, {way}: {result['items_per_second']:.0f} items/s", flush=True)
    out = {
        "versions": versions({"pgqueuer": "1.6.0"}),
        "settings": vars(args),
        "runs": runs,
    }
    write_result("cycle", out)
    report(out)


if __name__ == "__main__":
    main()
