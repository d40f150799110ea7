"""Shared set-up for store tests: kinds, configs, a store on a FakeClock."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg_pool import AsyncConnectionPool

from safelight.work.fakeclock import FakeClock
from safelight.work.kinds import KindSpec, Scope
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


def make_store(pool: AsyncConnectionPool[Any], clock: FakeClock, max_stalls: int = 3) -> WorkStore:
    return WorkStore(pool, clock, TEST_KINDS, max_stalls=max_stalls)


async def add_config(
    pool: AsyncConnectionPool[Any],
    clock: FakeClock,
    owner: str = "alice",
    root: str | None = None,
    active: bool = True,
) -> UUID:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO storage_configs (owner, root_path, active, created_at)"
            " VALUES (%s, %s, %s, %s) RETURNING id",
            (
                owner,
                root or f"/photos/{owner}/{clock.monotonic()}-{id(object())}",
                active,
                clock.now(),
            ),
        )
        row = await cur.fetchone()
        assert row is not None
        return UUID(str(row[0]))


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
