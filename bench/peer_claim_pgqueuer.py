"""PgQueuer's claim under the same backlog as safelight's, timed the same way.

Runs in bench/.venv-peers (it imports pgqueuer); bench/claim.py starts it and talks to
it over stdin/stdout, one JSON object a line, so both queues are measured in turns in
one run. Commands:

    {"cmd": "state", "state": "one" | "blocked", "backlog": N}
    {"cmd": "measure", "samples": N}   -> {"ms": [...]} (each claim rolled back)

The case (issue #6): one entrypoint with ``concurrency_limit=1`` is saturated (one
job picked) and holds ``backlog`` queued jobs ahead of one job of a free entrypoint,
also limited to 1. Each sample is PgQueuer's own dequeue statement (built by its
QueryQueueBuilder, batch size 1) on a psycopg connection in a transaction that rolls
back, the same driver and method as safelight's side; it must return the free job.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from datetime import timedelta

import psycopg
from pgqueuer.adapters.drivers.psycopg import PsycopgDriver
from pgqueuer.adapters.persistence.queries import Queries
from pgqueuer.ports.repository import EntrypointExecutionParameter

BUSY = "busy"
FREE = "free"
LIMITS = {BUSY: EntrypointExecutionParameter(1), FREE: EntrypointExecutionParameter(1)}
HEARTBEAT_TIMEOUT = timedelta(seconds=30)


async def _async_setup(url: str, state: str, backlog: int) -> None:
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        queries = Queries(PsycopgDriver(conn))
        cur = await conn.execute("SELECT to_regclass('pgqueuer') IS NOT NULL")
        row = await cur.fetchone()
        if not (row and row[0]):
            await queries.install()
        await conn.execute("TRUNCATE pgqueuer, pgqueuer_log")
        if state == "blocked":
            # Saturate BUSY through PgQueuer's own dequeue, so its slot is taken as
            # PgQueuer itself takes it.
            await queries.enqueue(BUSY, None)
            picked = await queries.dequeue(
                1, {BUSY: LIMITS[BUSY]}, uuid.uuid4(), None, HEARTBEAT_TIMEOUT
            )
            assert len(picked) == 1, picked
            step = 50_000
            for start in range(0, backlog, step):
                n = min(step, backlog - start)
                await queries.enqueue([BUSY] * n, [None] * n, [0] * n)
        await queries.enqueue(FREE, None)
        await conn.execute("VACUUM ANALYZE pgqueuer")
    finally:
        await conn.close()


def main() -> None:
    url = sys.argv[1]
    qm_id = uuid.uuid4()
    sql = None
    args: tuple[object, ...] = ()
    conn = psycopg.connect(url, autocommit=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["cmd"] == "state":
            asyncio.run(_async_setup(url, request["state"], int(request.get("backlog", 0))))
            query = Queries(driver=None).qbq.build_dequeue_query(  # type: ignore[arg-type]
                batch_size=1,
                entrypoints=list(LIMITS),
                concurrency_limits=[p.concurrency_limit for p in LIMITS.values()],
                queue_manager_id=qm_id,
                global_concurrency_limit=None,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
            )
            sql, args = query.sql, tuple(query.args)
            reply: dict[str, object] = {"ok": True}
        elif request["cmd"] == "measure":
            assert sql is not None
            times = []
            for _ in range(int(request["samples"])):
                conn.execute("BEGIN")
                cur = psycopg.RawCursor(conn)
                start = time.perf_counter()
                cur.execute(sql, args)
                rows = cur.fetchall()
                elapsed = time.perf_counter() - start
                conn.execute("ROLLBACK")
                if len(rows) != 1:
                    raise SystemExit(
                        f"PgQueuer's dequeue returned {len(rows)} jobs, not the free one"
                    )
                times.append(elapsed * 1000)
            reply = {"ms": times}
        elif request["cmd"] == "explain":
            assert sql is not None
            conn.execute("BEGIN")
            cur = psycopg.RawCursor(conn)
            cur.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, args)
            plan = "\n".join(r[0] for r in cur.fetchall())
            conn.execute("ROLLBACK")
            reply = {"plan": plan}
        else:
            break
        print(json.dumps(reply), flush=True)
    conn.close()


if __name__ == "__main__":
    main()
