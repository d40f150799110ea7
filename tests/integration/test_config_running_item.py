"""Migration 0005 (ADR 0011): a storage config names its running item, kept by a trigger
through every way an item starts or stops running; the claim reads idle configs from it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    claimed,
    make_store,
    running_item_mismatches,
    running_item_of,
)
from safelight.work.store import WorkStore

pytestmark = pytest.mark.integration


async def _expire_and_recover(store: WorkStore, clock: FakeClock) -> None:
    await clock.advance(LEASE + 1)
    await store.recover_expired_leases()


async def _ending(name: str, store: WorkStore, clock: FakeClock, item_id: int) -> None:
    endings: dict[str, Callable[[], Awaitable[object]]] = {
        "complete": lambda: store.complete(item_id, 1, {"ok": True}),
        "fail": lambda: store.fail(item_id, 1, "broken"),
        "cancel": lambda: store.cancel(item_id, 1),
        "release": lambda: store.release(item_id, 1),
        "retry": lambda: store.retry(item_id, 1, "connection lost"),
        "lease recovery": lambda: _expire_and_recover(store, clock),
    }
    await endings[name]()


@pytest.mark.parametrize(
    "ending", ["complete", "fail", "cancel", "release", "retry", "lease recovery"]
)
async def test_a_config_names_its_running_item_until_it_stops_running(
    pool: AsyncConnectionPool[Any], ending: str
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    assert await running_item_of(pool, c) is None
    item_id = await claimed(store, c)
    assert await running_item_of(pool, c) == item_id
    assert await running_item_of(pool, d) is None  # only its own config
    await _ending(ending, store, clock, item_id)
    assert await running_item_of(pool, c) is None
    assert await running_item_mismatches(pool) == []
    # Free again: its next item (or the requeued one) is claimed and named.
    await store.enqueue("burst_detection", config_id=c)
    again = await store.claim("w2", ALL_KINDS, lease_seconds=LEASE)
    assert again is not None and again.storage_config_id == c
    assert await running_item_of(pool, c) == again.id


async def test_an_item_superseded_by_lease_recovery_frees_its_config(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    item_id = await store.enqueue("crawl", config_id=c, dedup_key="crawl:c")
    assert await store.claim("w", ALL_KINDS, lease_seconds=LEASE) is not None
    # The same key queued again while the first runs: recovery must end the first.
    again = await store.enqueue("crawl", config_id=c, dedup_key="crawl:c")
    assert again != item_id
    await clock.advance(LEASE + 1)
    assert (await store.recover_expired_leases()).superseded == 1
    assert await running_item_of(pool, c) is None
    assert await running_item_mismatches(pool) == []


async def test_an_item_failed_by_its_last_stall_frees_its_config(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock, max_stalls=1)
    c = await add_config(pool, clock)
    await claimed(store, c)
    await clock.advance(LEASE + 1)
    assert (await store.recover_expired_leases()).failed == 1
    assert await running_item_of(pool, c) is None


async def test_rows_inserted_or_deleted_while_running_keep_the_name_right(
    pool: AsyncConnectionPool[Any],
) -> None:
    """Paths outside the store (an import, an operator's SQL, a config's deletion) are
    covered by the same trigger."""
    clock = FakeClock()
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    async with pool.connection() as conn:
        rows = await (
            await conn.execute(
                "INSERT INTO work_items (kind, storage_config_id, status, requested_at, attempt,"
                " lease_expires_at) SELECT 'crawl', c, 'running', %s, 1, %s"
                " FROM unnest(%s::uuid[]) c RETURNING id, storage_config_id",
                (clock.now(), clock.now(), [c, d]),
            )
        ).fetchall()
    ids = {UUID(str(cfg)): int(i) for i, cfg in rows}
    assert await running_item_of(pool, c) == ids[c]
    assert await running_item_of(pool, d) == ids[d]
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM work_items WHERE id = %s", (ids[c],))
        await conn.execute("DELETE FROM storage_configs WHERE id = %s", (d,))
    assert await running_item_of(pool, c) is None
    assert await running_item_mismatches(pool) == []


async def test_unscoped_and_queued_items_name_nothing(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    await store.enqueue("token_cleanup")
    await store.enqueue("crawl", config_id=c)
    unscoped = await store.claim("w", ["token_cleanup"], lease_seconds=LEASE)
    assert unscoped is not None and unscoped.storage_config_id is None
    assert await running_item_of(pool, c) is None
    assert await running_item_mismatches(pool) == []


async def test_behind_a_window_full_of_a_busy_configs_items_the_idle_config_is_found(
    pool: AsyncConnectionPool[Any],
) -> None:
    """The claim's second look (bench/claim.py's blocked state): the oldest 16 queued
    items all belong to a busy config, so only the index of idle configs finds the
    eligible one; a busy config's own items are never taken."""
    clock = FakeClock()
    store = make_store(pool, clock)
    busy = await add_config(pool, clock, root="/busy")
    idle = await add_config(pool, clock, root="/idle")
    await claimed(store, busy)
    await store.enqueue_many("crawl", [{"n": n} for n in range(40)], config_id=busy)
    await clock.advance(1)
    assert await store.claim("w2", ALL_KINDS, lease_seconds=LEASE) is None
    wanted = await store.enqueue("crawl", config_id=idle)
    got = await store.claim("w2", ALL_KINDS, lease_seconds=LEASE)
    assert got is not None and got.id == wanted
    assert await store.claim("w3", ALL_KINDS, lease_seconds=LEASE) is None
