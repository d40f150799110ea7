"""ADR 0069 on real PostgreSQL: a Worker claims its next item while its last outcome
commits, and that claim never takes the same config's next item before the outcome has
committed (the rule of ADR 0008, kept by the database)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import connect
from safelight.testing.rows import add_config
from safelight.testing.workerstack import make_stack
from safelight.work.model import Status
from safelight.work.store import WorkStore

pytestmark = pytest.mark.integration


async def _status(store: WorkStore, item_id: int) -> Status:
    item = await store.get(item_id)
    assert item is not None
    return item.status


async def _until_outcome_blocked(admin: psycopg.AsyncConnection[Any]) -> None:
    """Wait (on the database's answers, not a timer) until an outcome's statement waits
    on a lock."""
    for _ in range(10_000):
        cur = await admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE '%%UPDATE work_attempts%%' AND query NOT LIKE '%%pg_stat%%'"
        )
        row = await cur.fetchone()
        if row and row[0] > 0:
            return
        await asyncio.sleep(0.005)  # a poll of the server, not a deadline
    raise AssertionError("the outcome never blocked on the held lock")


async def _until_running(store: WorkStore, item_id: int) -> None:
    for _ in range(10_000):
        if await _status(store, item_id) is Status.RUNNING:
            return
        await asyncio.sleep(0.005)  # a poll of the server, not a deadline
    raise AssertionError(f"item {item_id} was never claimed")


async def test_the_claim_beside_an_uncommitted_outcome_passes_over_its_config(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    store, clock = stack.store, stack.clock
    c = await add_config(pool, clock)
    a = await store.enqueue("noop", config_id=c, payload={"seconds": 5})
    await clock.advance(1)
    b = await store.enqueue("noop", config_id=c)
    await clock.advance(1)
    u = await store.enqueue("noop")
    worker = stack.worker("w1")
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    holder = await connect(database_url, "holder")
    admin = await connect(database_url, "observer")
    try:
        await _until_running(store, a)
        await clock.settle()
        # Hold a's attempt row: its outcome will wait on it, uncommitted.
        await holder.execute("BEGIN")
        await holder.execute("SELECT 1 FROM work_attempts WHERE work_item_id = %s FOR UPDATE", (a,))
        await clock.advance(5)  # a's handler ends and its outcome goes out
        await _until_outcome_blocked(admin)
        # The claim went out beside it: the unscoped item, never c's next one.
        await _until_running(store, u)
        assert await _status(store, a) is Status.RUNNING
        assert await _status(store, b) is Status.QUEUED
        assert stack.finished == []
        await holder.execute("COMMIT")
        await stack.wait_finished(3)
    finally:
        shutdown.set()
        await asyncio.wait_for(run, timeout=30)  # a real-time guard
        await holder.close()
        await admin.close()
    assert [i.id for i, _ in stack.finished] == [a, u, b]
    assert all(r.applied for _, r in stack.finished)
    for item_id in (a, b, u):
        assert await _status(store, item_id) is Status.SUCCEEDED
