"""Benchmark 10: the floor of a durable cycle, the statements with no Worker (issue #18).

    .venv/bin/python bench/cycle.py [--items 20000] [--rounds 3] [--processes 1,2]

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
- ``safelight-overlapped-prepared``: the same with ``attempts_finish`` prepared (psycopg
  prepares it after 5 uses), on a database left unanalysed, so the planner assumes a
  history of 10 pages rather than an empty one: whether preparing the outcome could be
  made safe that way (the store plans it anew each time since a plan cached on an
  analysed, empty history scanned the whole history: docs/benchmarks.md, section 3);
- ``bare-one-commit``: the least any durable queue can do, in one transaction a cycle:
  a table of ids and statuses, the claim an ``UPDATE`` of the 10 oldest queued rows
  (``FOR UPDATE SKIP LOCKED``), the outcome an ``UPDATE`` by id: no rule, no lease, no
  history, no fencing;
- ``pgqueuer-durable``: PgQueuer's own ``dequeue`` of 10 and its ``log_jobs`` of them,
  awaited before the next dequeue (bench/peer_worker.py ``cycle``, on asyncpg);

and, for reference, in the same round, the drains of bench/throughput.py:
``safelight-10`` (``safelight worker --concurrency 10``) and ``pgqueuer-defaults``
(PgQueuer's defaults, batch 10, its outcomes buffered and written later).

``--processes 2`` runs each loop in two processes at once on one database (they start
together; the rate is from the first claim to the last loop's end) and each drain with
two Worker processes: the floor of two processes against PgQueuer's two.

For each: items/s, and per cycle of 10 the wall time, the client's CPU (the loop's own
process) and the server's (the way's backends, ``common.ServerCpu``). The drains' CPU
is without their processes' start-up and exit (bench/throughput.py measures those on the
drained queue and takes them out).
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
    "safelight-overlapped-prepared",
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
        # Every loop process of a run is connected before any claims (the parent's "go").
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        started = time.time()
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
            if way in ("safelight-overlapped", "safelight-overlapped-prepared"):
                rows, _ = await asyncio.gather(
                    _claim(conn, claim, claim_params),
                    other.execute(finish, params, prepare=way.endswith("-prepared")),
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
        return {
            "seconds": seconds,
            "cpu_seconds": cpu,
            "cycles": cycles,
            "items": items,
            "started": started,
            "ended": time.time(),
        }
    finally:
        await conn.close()
        await other.close()


def _one_loop(way: str, items: int, processes: int) -> dict[str, float]:
    """The loop in ``processes`` processes of their own at once, on one database (their
    CPU alone), with the server's CPU beside them. The cycles and CPU are all of them."""
    with bench_database(f"cycle_{way.replace('-', '_')}", migrated=True) as url:
        if way == "bare-one-commit":
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(_BARE_SCHEMA.replace("%(items)s", str(items)))
        elif way in LOOPS:
            asyncio.run(throughput.safelight_enqueue(url, items))
        else:
            throughput.peer("setup", "pgqueuer", url)
            throughput.peer_enqueue("pgqueuer", url, items)
        if way != "safelight-overlapped-prepared":
            # Not before the prepared way: analysed while work_attempts is empty, its
            # statistics make the cached plan of attempts_finish scan the whole history
            # (docs/benchmarks.md, 3). Left unanalysed, the planner assumes tables of
            # at least 10 pages: whether a plan cached then stays good as they change.
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
        if way in LOOPS:
            argv = [sys.executable, __file__, "--loop", way, url]
        else:
            argv = [peers_python(), str(BENCH / "peer_worker.py"), "cycle", "pgqueuer", url]
            argv.append(str(BATCH))
        dbname = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
        with ServerCpu(str(dbname)) as server:
            children = [
                subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for _ in range(processes)
            ]
            for child in children:
                assert child.stdout is not None
                if child.stdout.readline().strip() != "ready":
                    raise SystemExit(f"{way}: a loop process did not start")
            for child in children:
                assert child.stdin is not None
                child.stdin.write("go\n")
                child.stdin.flush()
            loops = [json.loads(child.communicate(timeout=600)[0]) for child in children]
            if any(child.returncode for child in children):
                raise SystemExit(f"{way}: a loop process failed")
    cycles = sum(loop["cycles"] for loop in loops)
    done = sum(loop["items"] for loop in loops)
    if done != items:
        raise SystemExit(f"{way}: {done} of {items} items done")
    # From the first loop's first claim to the last loop's end (they start together).
    seconds = max(loop["ended"] for loop in loops) - min(loop["started"] for loop in loops)
    return {
        "items_per_second": items / seconds,
        "wall_ms_per_cycle": seconds * 1000 * BATCH / items,
        "client_cpu_ms_per_cycle": sum(loop["cpu_seconds"] for loop in loops) * 1000 / cycles,
        "server_cpu_ms_per_cycle": None
        if server.seconds is None
        else server.seconds * 1000 / cycles,
    }


def _one_drain(way: str, items: int, home: Path, processes: int) -> dict[str, float]:
    run = throughput.one_run(way, processes, items, home)
    server = run["server_cpu_ms_per_item"]
    return {
        "items_per_second": run["items_per_second"],
        "wall_ms_per_cycle": BATCH * 1000 / run["items_per_second"],
        "client_cpu_ms_per_cycle": run["worker_drain_cpu_ms_per_item"] * BATCH,
        "server_cpu_ms_per_cycle": None if server is None else server * BATCH,
    }


def report(out: dict[str, Any]) -> None:
    for processes, runs in out["runs"].items():
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
            f"\n{processes} process(es): 1.2x PgQueuer's drain at its defaults is "
            f"{1.2 * reference:.0f} items/s, 10 items in {BATCH * 1000 / (1.2 * reference):.2f} ms"
        )
        print_table(
            [
                "way",
                "items/s, median [min..max]",
                "vs PgQueuer's drain",
                "wall ms for 10 items",
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
    parser.add_argument(
        "--processes",
        default="1",
        help="comma-separated: each loop runs in this many processes at once on one "
        "database, each drain with this many Worker processes",
    )
    args = parser.parse_args()
    counts = [int(p) for p in args.processes.split(",")]
    runs: dict[int, dict[str, list[dict[str, float]]]] = {
        p: {way: [] for way in WAYS} for p in counts
    }
    with tempfile.TemporaryDirectory(prefix="safelight-bench-") as home:
        for r in range(args.rounds):
            for p in counts:
                for way in WAYS[r % len(WAYS) :] + WAYS[: r % len(WAYS)]:
                    if way in DRAINS:
                        result = _one_drain(way, args.items, Path(home), p)
                    else:
                        result = _one_loop(way, args.items, p)
                    runs[p][way].append(result)
                    print(
                        f"round {r + 1}, {p} process(es), {way}: "
                        f"{result['items_per_second']:.0f} items/s",
                        flush=True,
                    )
    out = {
        "versions": versions({"pgqueuer": "1.6.0"}),
        "settings": vars(args),
        "runs": runs,
    }
    write_result("cycle", out)
    report(out)


if __name__ == "__main__":
    main()
