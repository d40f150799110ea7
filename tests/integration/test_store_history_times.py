"""The attempt history's times are the database's, taken inside each transition's own
statement, so the operator's self-join of ``work_attempts`` finds no overlap even where
a claim was made before its config's previous attempt had ended (ADR 0015).

Each race is forced (a connection held, a transaction held open), never timed.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    DatabaseTimeClock,
    claimed,
    make_store,
    overlapping_attempts,
)
from safelight.views.queries import queue_status
from tests.faults import checker

pytestmark = pytest.mark.integration

# Loop turns to wait for a task to reach a state it gets to without any I/O of its own.
_TURNS = 1000
# Polls of the server for a backend to be waiting on a lock, 10 ms apart.
_POLLS = 1000


async def _until_a_request_waits(pool: AsyncConnectionPool[Any]) -> None:
    for _ in range(_TURNS):
        if pool.get_stats().get("requests_waiting", 0) >= 1:
            return
        await asyncio.sleep(0)
    raise AssertionError("nothing came to wait for the pool's connection")


async def _until_a_backend_waits_on_a_transaction(pool: AsyncConnectionPool[Any]) -> None:
    async with pool.connection() as conn:
        for _ in range(_POLLS):
            cur = await conn.execute(
                "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE NOT l.granted AND l.locktype = 'transactionid'"
                " AND a.datname = current_database()"
            )
            row = await cur.fetchone()
            if row is not None and row[0] >= 1:
                return
            await asyncio.sleep(0.01)
    raise AssertionError("no statement came to wait for the held transaction")


async def _attempt(pool: AsyncConnectionPool[Any], item_id: int) -> tuple[Any, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT claimed_at, ended_at FROM work_attempts WHERE work_item_id = %s", (item_id,)
        )
        (row,) = await cur.fetchall()
        return row[0], row[1]


async def test_a_claim_made_before_the_previous_attempt_ended_is_stamped_after_that_end(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    # As with group commit: a Worker's claim is made, then waits (here for its pool's
    # only connection, held by the test) while its config's running attempt ends and
    # commits; only then does the claim reach the server, find the config free and
    # take the next item. Stamped by the Worker when it was made (the clock moves on
    # meanwhile), the claim would start before the end it followed.
    clock = DatabaseTimeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock)
    first = await claimed(store, config)
    second = await store.enqueue("crawl", config_id=config)

    one_connection = await open_pool(database_url, min_size=1, max_size=1)
    try:
        late = make_store(one_connection, clock)
        async with one_connection.connection():
            claim = asyncio.create_task(late.claim("late", ALL_KINDS, lease_seconds=LEASE))
            await _until_a_request_waits(one_connection)
            await clock.advance(1)
            assert await store.complete(first, 1)
        item = await claim
        assert item is not None and item.id == second
        await clock.advance(1)
        assert await late.complete(second, 1)
    finally:
        await one_connection.close()

    assert await overlapping_attempts(pool) == []
    first_claimed, first_ended = await _attempt(pool, first)
    second_claimed, second_ended = await _attempt(pool, second)
    assert first_claimed < first_ended <= second_claimed < second_ended
    done_first, done_second = await store.get(first), await store.get(second)
    assert done_first is not None and done_second is not None
    assert done_first.finished_at == first_ended and done_second.finished_at == second_ended
    assert done_second.started_at is not None and done_first.finished_at is not None
    assert done_first.finished_at <= done_second.started_at


async def _ghost_attempt_begins(conn: Any, config: UUID) -> int:
    """In the caller's open transaction: an item of ``config`` running, with its attempt."""
    cur = await conn.execute(
        "INSERT INTO work_items (kind, storage_config_id, status, requested_at, attempt,"
        " worker_id, started_at, heartbeat_at, lease_expires_at)"
        " VALUES ('crawl', %s, 'running', clock_timestamp(), 1, 'ghost', clock_timestamp(),"
        " clock_timestamp(), clock_timestamp() + interval '60 seconds') RETURNING id",
        (config,),
    )
    row = await cur.fetchone()
    assert row is not None
    await conn.execute(
        "INSERT INTO work_attempts (work_item_id, attempt, worker_id, storage_config_id,"
        " claimed_at) VALUES (%s, 1, 'ghost', %s, clock_timestamp())",
        (row[0], config),
    )
    return int(row[0])


async def _ghost_attempt_ends(conn: Any, item_id: int) -> None:
    await conn.execute(
        "UPDATE work_items SET status = 'succeeded', finished_at = clock_timestamp(),"
        " lease_expires_at = NULL WHERE id = %s",
        (item_id,),
    )
    await conn.execute(
        "UPDATE work_attempts SET ended_at = clock_timestamp(), outcome = 'succeeded'"
        " WHERE work_item_id = %s",
        (item_id,),
    )


async def test_a_claim_that_waited_at_the_running_index_is_stamped_after_the_end_it_waited_for(
    pool: AsyncConnectionPool[Any],
) -> None:
    # The claim's snapshot can miss a running item of its config whose transaction had
    # not committed yet: the claim then takes the config's head and waits at
    # ix_work_items_storage_config_running for that transaction. Here the transaction
    # is the test's own, held open: an attempt that begins and ends in it. The claim
    # goes ahead once it commits (the running entry is dead), and its attempt must be
    # stamped after that end: not when its statement or transaction began, nor when
    # it wrote its row, which was before the wait.
    clock = DatabaseTimeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock)
    queued = await store.enqueue("crawl", config_id=config)
    async with pool.connection() as held:
        async with held.transaction():
            ghost = await _ghost_attempt_begins(held, config)
            claim = asyncio.create_task(store.claim("w", ALL_KINDS, lease_seconds=LEASE))
            await _until_a_backend_waits_on_a_transaction(pool)
            await _ghost_attempt_ends(held, ghost)
        item = await claim
    assert item is not None and item.id == queued
    assert await store.complete(queued, 1)

    assert await overlapping_attempts(pool) == []
    ghost_claimed, ghost_ended = await _attempt(pool, ghost)
    claimed_at, ended_at = await _attempt(pool, queued)
    assert ghost_claimed < ghost_ended <= claimed_at < ended_at


async def test_the_fault_checker_reports_a_history_whose_times_overlap(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    # The fault run's checks of the history's times (tests/faults/checker.py) are not
    # vacuous: a history written with a claim stamped early is reported, per config
    # and per item, and the same history with consistent times is not.
    clock = DatabaseTimeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock)
    first = await claimed(store, config)
    assert await store.release(first, 1)
    again = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert again is not None and again.id == first and again.attempt == 2
    assert await store.complete(first, 2)
    other = await claimed(store, config)
    assert await store.complete(other, 1)

    def checks() -> list[str]:
        with psycopg.connect(database_url, autocommit=True) as conn:
            found = checker.check_attempts(conn) + checker.check_attempt_history(conn)
        return [str(v) for v in found]

    assert await asyncio.to_thread(checks) == []
    async with pool.connection() as conn:
        # The second attempt of the first item, and the other item's, each stamped a
        # microsecond before the attempt it followed had ended.
        for item_id, attempt, after in ((first, 2, (first, 1)), (other, 1, (first, 2))):
            await conn.execute(
                "UPDATE work_attempts SET claimed_at = ("
                " SELECT ended_at - interval '1 microsecond' FROM work_attempts"
                " WHERE work_item_id = %s AND attempt = %s)"
                " WHERE work_item_id = %s AND attempt = %s",
                (*after, item_id, attempt),
            )
    found = await asyncio.to_thread(checks)
    assert len([v for v in found if "in the attempt history" in v]) == 2, found
    assert len([v for v in found if f"item {first}: attempt 2 claimed at" in v]) == 1, found


async def test_status_judges_a_lease_by_the_database_clock_or_by_the_clock_given(
    pool: AsyncConnectionPool[Any],
) -> None:
    # `safelight status` says "expired" exactly when lease recovery would take the item
    # back: by the database's clock (None), or by the time a test's clock gives.
    clock = DatabaseTimeClock()
    store = make_store(pool, clock)
    item_id = await claimed(store, await add_config(pool, clock))
    item = await store.get(item_id)
    assert item is not None and item.lease_expires_at is not None
    lease = item.lease_expires_at

    async def expired(now: Any) -> bool:
        (running,) = (await queue_status(pool, now, limit=5, owner=None))["running"]
        return bool(running["lease_expired"])

    assert not await expired(None)
    assert await expired(lease + timedelta(seconds=1))
    assert not await expired(lease - timedelta(seconds=1))
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE work_items SET lease_expires_at = clock_timestamp() - interval '1 second'"
            " WHERE id = %s",
            (item_id,),
        )
    assert await expired(None)
    assert not await expired(lease - timedelta(days=1))
    # Its totals add up a status over every kind.
    await store.enqueue("noop")
    await store.enqueue("token_cleanup")
    totals = (await queue_status(pool, None, limit=5, owner=None))["totals"]
    assert totals == {"queued": 2, "running": 1}
