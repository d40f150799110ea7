"""The Worker on real PostgreSQL: wake-ups, idleness, shutdown, recovery, schedules."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import CRAWL
from safelight.testing.rows import add_config
from safelight.testing.stores import count
from safelight.testing.workerstack import LEASE, make_stack
from safelight.work.maintenance import (
    LeaseRecovery,
    PerConfig,
    Periodic,
    Scheduler,
    ScheduleSettings,
)
from safelight.work.model import Status
from safelight.work.outcome import Released, Succeeded
from safelight.work.wakeup import Listener, WakeupHub

pytestmark = pytest.mark.integration


async def test_run_once_claims_and_completes_one_item(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    item_id = await stack.store.enqueue("noop", payload={"result": {"answer": 42}})
    worker = stack.worker("w1")
    result = await worker.run_once()
    assert result is not None and result.outcome == Succeeded({"answer": 42})
    item = await stack.store.get(item_id)
    assert item is not None and item.status is Status.SUCCEEDED and item.worker_id == "w1"
    assert await worker.run_once() is None


async def test_a_notification_wakes_an_idle_worker_without_waiting_for_the_poll(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    hub = WakeupHub()
    listener = Listener(database_url, hub, stack.clock, retry_seconds=5.0, retry_max_seconds=60.0)
    listen_task = asyncio.create_task(listener.run())
    shutdown = asyncio.Event()
    worker = stack.worker("w1", wake=hub.subscribe())
    run = asyncio.create_task(worker.run(shutdown))
    try:
        await asyncio.wait_for(listener.connected.wait(), timeout=30)
        await stack.clock.settle()
        # The worker found nothing and is parked on its poll; the clock never moves in
        # this test, so only the NOTIFY of the enqueue can wake it.
        await stack.store.enqueue("noop")
        await stack.wait_finished(1)
        # A busy config's next item starts as soon as the running one ends: the end
        # notifies too.
        c = await add_config(pool, stack.clock)
        await stack.store.enqueue("noop", config_id=c)
        await stack.store.enqueue("noop", config_id=c)
        await stack.wait_finished(3)
    finally:
        shutdown.set()
        await asyncio.wait_for(run, timeout=30)
        listen_task.cancel()
        await asyncio.gather(listen_task, return_exceptions=True)
    assert [r.outcome for _, r in stack.finished] == [Succeeded({"slept": 0})] * 3


async def test_until_idle_returns_once_nothing_it_could_run_is_left(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    for _ in range(3):
        await stack.store.enqueue("noop")
    worker = stack.worker("w1", until_idle=True)
    await asyncio.wait_for(worker.run(asyncio.Event()), timeout=30)
    assert len(stack.finished) == 3
    assert await count(pool, "SELECT count(*) FROM work_items WHERE status = 'succeeded'") == 3


async def test_until_idle_waits_for_an_item_running_elsewhere(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    await stack.store.enqueue("noop")
    other = await stack.store.claim("elsewhere", ["noop"], lease_seconds=LEASE)
    assert other is not None
    worker = stack.worker("w1", until_idle=True)
    run = asyncio.create_task(worker.run(asyncio.Event()))
    # Until the Worker waits for its next poll on the clock: its empty claim, its idle
    # check and its look for a retry falling due are real round trips to the database,
    # which settling the event loop does not wait for (on a busy machine, advancing
    # before the Worker slept would leave its poll never due).
    for _ in range(3000):
        if stack.clock.deadlines():
            break
        await asyncio.sleep(0.01)  # polling for the Worker to park, not for a deadline
    assert stack.clock.deadlines(), "the Worker never waited for its next poll"
    assert not run.done()  # the other Worker's item is still running
    assert await stack.store.complete(other.id, other.attempt)
    await stack.clock.advance(5)  # its next poll
    await asyncio.wait_for(run, timeout=30)


async def test_shutdown_releases_the_running_item_without_a_stall(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    item_id = await stack.store.enqueue("noop", payload={"seconds": 1000})
    shutdown = asyncio.Event()
    run = asyncio.create_task(stack.worker("w1").run(shutdown))
    for _ in range(1000):
        item = await stack.store.get(item_id)
        if item is not None and item.status is Status.RUNNING:
            break
        await asyncio.sleep(0.01)  # polling the database for the claim
    await stack.clock.advance(1)
    shutdown.set()
    await asyncio.wait_for(run, timeout=30)
    assert stack.finished[0][1].outcome == Released()
    item = await stack.store.get(item_id)
    assert item is not None
    assert (item.status, item.stalls, item.attempt) == (Status.QUEUED, 0, 1)


async def test_a_dead_workers_item_comes_back_by_recovery_and_finishes(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    item_id = await stack.store.enqueue("noop")
    dead = await stack.store.claim("dead", ["noop"], lease_seconds=LEASE)
    assert dead is not None
    worker = stack.worker("w1")
    assert await worker.run_once() is None
    await stack.clock.advance(LEASE + 1)
    assert (await LeaseRecovery(stack.store).run_once()).requeued == 1
    result = await worker.run_once()
    assert result is not None and isinstance(result.outcome, Succeeded)
    item = await stack.store.get(item_id)
    assert item is not None and (item.status, item.stalls, item.attempt) == (
        Status.SUCCEEDED,
        1,
        2,
    )


async def test_per_user_worker_serves_only_its_users_configs(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    alice = await add_config(pool, stack.clock, owner="alice")
    bob = await add_config(pool, stack.clock, owner="bob")
    await stack.store.enqueue("noop", config_id=alice)
    bobs = await stack.store.enqueue("noop", config_id=bob)
    worker = stack.worker("bob", owner="bob", until_idle=True)
    await asyncio.wait_for(worker.run(asyncio.Event()), timeout=30)
    assert [item.id for item, _ in stack.finished] == [bobs]


async def test_schedules_enqueue_each_period_once_across_workers(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    c = await add_config(pool, stack.clock)
    settings = ScheduleSettings(
        periodic=(Periodic("token_cleanup", 86400), Periodic("proxy_sweep", 3600)),
        per_config=(PerConfig("crawl", 4 * 3600, CRAWL.dedup_key),),
    )
    schedulers = [Scheduler(stack.store, settings) for _ in range(4)]
    first = await asyncio.gather(*(s.run_once() for s in schedulers))
    assert sum(len(ids) for ids in first) == 3  # whichever Worker took each schedule
    kinds = "SELECT kind, count(*) FROM work_items GROUP BY kind ORDER BY kind"
    async with pool.connection() as conn:
        rows = await (await conn.execute(kinds)).fetchall()
    assert rows == [("crawl", 1), ("proxy_sweep", 1), ("token_cleanup", 1)]
    crawl = await stack.store.claim("w", ["crawl"], lease_seconds=LEASE)
    assert crawl is not None and crawl.storage_config_id == c
    sweep = await stack.store.claim("w", ["proxy_sweep"], lease_seconds=LEASE)
    assert sweep is not None and await stack.store.complete(sweep.id, sweep.attempt)

    await stack.clock.advance(3599)
    assert [await s.run_once() for s in schedulers] == [[], [], [], []]
    await stack.clock.advance(1)
    again = await asyncio.gather(*(s.run_once() for s in schedulers))
    assert sum(len(ids) for ids in again) == 1
    assert await count(pool, "SELECT count(*) FROM work_items WHERE kind = 'proxy_sweep'") == 2
