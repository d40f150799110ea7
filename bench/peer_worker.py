"""procrastinate and PgQueuer beside safelight: schema, enqueue, and a draining worker.

Runs in bench/.venv-peers (bench/throughput.py starts it):

    peer_worker.py setup   QUEUE URL
    peer_worker.py enqueue QUEUE URL ITEMS single|bulk   -> {"seconds": s} on stdout
    peer_worker.py work    QUEUE URL CONCURRENCY [BATCH_SIZE]
    peer_worker.py cycle   pgqueuer URL BATCH_SIZE   -> "ready"; after a line on stdin,
                                                       {"seconds", "cpu_seconds", "cycles",
                                                        "items", "started", "ended"}

QUEUE is ``procrastinate`` or ``pgqueuer``. Tasks do nothing (async no-ops). ``work``
drains the queue and exits: procrastinate with ``wait=False`` and ``concurrency``;
PgQueuer in drain mode with ``max_concurrent_tasks`` = CONCURRENCY (0: its default,
unlimited) and ``batch_size`` = BATCH_SIZE, on asyncpg (its usual driver). ``cycle``
is PgQueuer's statements alone, made durable the way safelight's are (bench/cycle.py).
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys
import time
import uuid
from datetime import timedelta
from typing import Any

import asyncpg
import procrastinate
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.domain.types import QueueExecutionMode, QueueManagerId
from pgqueuer.models import Job
from pgqueuer.ports.repository import EntrypointExecutionParameter

BULK_CHUNK = 1000


def procrastinate_app(url: str) -> procrastinate.App:
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")
    async def noop() -> None:
        return None

    return app


async def setup(queue: str, url: str) -> None:
    if queue == "procrastinate":
        app = procrastinate_app(url)
        async with app.open_async():
            await app.schema_manager.apply_schema_async()
    else:
        conn = await asyncpg.connect(url)
        try:
            await Queries(AsyncpgDriver(conn)).install()
        finally:
            await conn.close()


async def enqueue(queue: str, url: str, items: int, mode: str) -> float:
    if queue == "procrastinate":
        app = procrastinate_app(url)
        async with app.open_async():
            task: Any = app.tasks["noop"]
            start = time.perf_counter()
            if mode == "bulk":
                for first in range(0, items, BULK_CHUNK):
                    n = min(BULK_CHUNK, items - first)
                    await task.batch_defer_async(*({} for _ in range(n)))
            else:
                for _ in range(items):
                    await task.defer_async()
            return time.perf_counter() - start
    conn = await asyncpg.connect(url)
    try:
        queries = Queries(AsyncpgDriver(conn))
        start = time.perf_counter()
        if mode == "bulk":
            for first in range(0, items, BULK_CHUNK):
                n = min(BULK_CHUNK, items - first)
                await queries.enqueue(["noop"] * n, [None] * n, [0] * n)
        else:
            for _ in range(items):
                await queries.enqueue("noop", None)
        return time.perf_counter() - start
    finally:
        await conn.close()


async def work(queue: str, url: str, concurrency: int, batch_size: int) -> None:
    if queue == "procrastinate":
        app = procrastinate_app(url)
        async with app.open_async():
            await app.run_worker_async(
                concurrency=concurrency, wait=False, install_signal_handlers=False
            )
        return
    conn = await asyncpg.connect(url)
    try:
        pgq = PgQueuer(AsyncpgDriver(conn))

        @pgq.entrypoint("noop")
        async def noop(job: Job) -> None:
            return None

        await pgq.run(
            batch_size=batch_size,
            max_concurrent_tasks=concurrency or None,
            mode=QueueExecutionMode.drain,
        )
    finally:
        await conn.close()


async def cycle(url: str, batch_size: int) -> dict[str, float]:
    """PgQueuer's own two statements with no executor (bench/cycle.py): ``dequeue`` of
    ``batch_size``, then ``log_jobs`` of all of them as successful, awaited before the
    next dequeue, so every outcome is durable before the next claim, as safelight's are.
    The seconds and this process's CPU seconds of the loop alone, its cycles and items."""
    conn = await asyncpg.connect(url)
    try:
        queries = Queries(AsyncpgDriver(conn))
        manager = QueueManagerId(uuid.uuid4())
        entrypoints = {"noop": EntrypointExecutionParameter(concurrency_limit=0)}
        # Every loop process of a run is connected before any dequeues (bench/cycle.py).
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        started = time.time()
        cycles = items = 0
        cpu = _cpu_seconds()
        start = time.perf_counter()
        while jobs := await queries.dequeue(
            batch_size=batch_size,
            entrypoints=entrypoints,
            queue_manager_id=manager,
            global_concurrency_limit=None,
            heartbeat_timeout=timedelta(seconds=30),
        ):
            await queries.log_jobs([(job, "successful", None) for job in jobs])
            cycles += 1
            items += len(jobs)
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


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    command, queue, url = sys.argv[1:4]
    if queue not in ("procrastinate", "pgqueuer"):
        raise SystemExit(f"unknown queue {queue}")
    if command == "setup":
        asyncio.run(setup(queue, url))
    elif command == "enqueue":
        seconds = asyncio.run(enqueue(queue, url, int(sys.argv[4]), sys.argv[5]))
        print(json.dumps({"seconds": seconds}), flush=True)
    elif command == "cycle":
        print(json.dumps(asyncio.run(cycle(url, int(sys.argv[4])))), flush=True)
    elif command == "work":
        batch = int(sys.argv[5]) if len(sys.argv) > 5 else 10
        asyncio.run(work(queue, url, int(sys.argv[4]), batch))
    else:
        raise SystemExit(f"unknown command {command}")


if __name__ == "__main__":
    main()
