"""Shared set-up for store tests: kinds, configs, a store on a FakeClock, and the
operator's check of the attempt history."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from safelight.testing.fakeclock import FakeClock
from safelight.work.kinds import KindSpec, Scope
from safelight.work.observer import NO_OBSERVER, EngineObserver
from safelight.work.store import WorkStore

TEST_KINDS = (
    KindSpec("crawl", Scope.REQUIRED),
    KindSpec("burst_detection", Scope.REQUIRED),
    KindSpec("proxy_deletion", Scope.OPTIONAL),
    KindSpec("noop", Scope.OPTIONAL),
    KindSpec("token_cleanup", Scope.FORBIDDEN),
)
ALL_KINDS = [k.name for k in TEST_KINDS]
LEASE = 60.0


class DatabaseTimeClock(FakeClock):
    """A FakeClock whose store records the database's times, as production does.

    Its timers, sleeps and ``now()`` are the FakeClock's; only
    :meth:`transition_time` says "the database's clock", as SystemClock's does, so a
    test sees the history the statements themselves stamp."""

    def transition_time(self) -> datetime | None:  # type: ignore[override]  # as Clock says
        return None


def make_store(
    pool: AsyncConnectionPool[Any],
    clock: FakeClock,
    max_stalls: int = 3,
    observer: EngineObserver = NO_OBSERVER,
) -> WorkStore:
    return WorkStore(pool, clock, TEST_KINDS, max_stalls=max_stalls, observer=observer)


async def claimed(store: WorkStore, config_id: UUID, kind: str = "crawl") -> int:
    """Enqueue an item of ``config_id`` and claim it (the queue holding nothing older)."""
    item_id = await store.enqueue(kind, config_id=config_id)
    item = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert item is not None and item.id == item_id
    return item_id


async def status_of(pool: AsyncConnectionPool[Any], item_id: int) -> str:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT status::text FROM work_items WHERE id = %s", (item_id,))
        row = await cur.fetchone()
        assert row is not None
        return str(row[0])


async def count(pool: AsyncConnectionPool[Any], sql: str, *params: object) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(sql, params)
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def running_item_of(pool: AsyncConnectionPool[Any], config_id: UUID) -> int | None:
    """The item a config names as its running one (migration 0005)."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT running_item_id FROM storage_configs WHERE id = %s", (config_id,)
        )
        row = await cur.fetchone()
        assert row is not None
        return None if row[0] is None else int(row[0])


# Every config whose running_item_id disagrees with its items: none, in any state.
RUNNING_ITEM_MISMATCHES = """
SELECT c.id, c.running_item_id, r.id
FROM storage_configs c
LEFT JOIN work_items r ON r.storage_config_id = c.id AND r.status = 'running'
WHERE c.running_item_id IS DISTINCT FROM r.id
"""


async def running_item_mismatches(pool: AsyncConnectionPool[Any]) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(RUNNING_ITEM_MISMATCHES)
        return list(await cur.fetchall())


# The operator's check of the rule from the attempt history alone (issue #13): two
# attempts of one storage config whose [claimed_at, ended_at) intervals overlap. An
# attempt not ended yet runs on (its ended_at is open), so this is stricter than the
# plain "a.claimed_at < b.ended_at and b.claimed_at < a.ended_at".
OVERLAPPING_ATTEMPTS = """
SELECT a.storage_config_id, a.work_item_id, a.attempt, a.claimed_at, a.ended_at,
       b.work_item_id, b.attempt, b.claimed_at, b.ended_at
FROM work_attempts a
JOIN work_attempts b
  ON b.storage_config_id = a.storage_config_id
 AND (a.work_item_id, a.attempt) < (b.work_item_id, b.attempt)
WHERE a.claimed_at < coalesce(b.ended_at, 'infinity')
  AND b.claimed_at < coalesce(a.ended_at, 'infinity')
ORDER BY a.storage_config_id, a.claimed_at, b.claimed_at
"""


async def overlapping_attempts(pool: AsyncConnectionPool[Any]) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(OVERLAPPING_ATTEMPTS)
        return list(await cur.fetchall())


async def wait_until_blocked_on_a_lock(admin: psycopg.AsyncConnection[Any], app: str) -> None:
    """Wait (on the database's answers, not a timer) until ``app``'s query waits on a lock."""
    for _ in range(10_000):
        cur = await admin.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = %s AND wait_event_type = 'Lock'",
            (app,),
        )
        row = await cur.fetchone()
        if row and row[0] > 0:
            return
        # A poll of the server, not a wait for a deadline.
        await asyncio.sleep(0.005)  # noqa: TID251
    raise AssertionError(f"{app} never blocked on a lock")
