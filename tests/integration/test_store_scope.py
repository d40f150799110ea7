"""ADR 0008: at most one running item per storage config, across all Workers."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import connect
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    count,
    make_store,
    running_item_of,
    wait_until_blocked_on_a_lock,
)
from safelight.work.model import Status
from safelight.work.observer import NoObserver
from safelight.work.store import QUERIES

pytestmark = pytest.mark.integration


async def test_claims_the_oldest_eligible_item_first(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    first = await store.enqueue("noop")
    await clock.advance(1)
    second = await store.enqueue("crawl", config_id=c)
    a = await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    b = await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert (a and a.id, b and b.id) == (first, second)
    assert a is not None and a.status is Status.RUNNING and a.attempt == 1
    assert a.lease_expires_at is not None
    assert (a.lease_expires_at - clock.now()).total_seconds() == LEASE
    assert await store.claim("w1", ALL_KINDS, lease_seconds=LEASE) is None


async def test_a_busy_config_is_passed_over_for_other_configs_and_unscoped_work(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    c1 = await store.enqueue("crawl", config_id=c)
    await clock.advance(1)
    c2 = await store.enqueue("burst_detection", config_id=c)
    await clock.advance(1)
    d1 = await store.enqueue("crawl", config_id=d)
    await clock.advance(1)
    u1 = await store.enqueue("token_cleanup")

    running = await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert running is not None and running.id == c1
    # C is busy: its older item c2 waits, and D's item and the unscoped one go ahead.
    got = [await store.claim(f"w{i}", ALL_KINDS, lease_seconds=LEASE) for i in (2, 3, 4)]
    assert [g.id if g else None for g in got] == [d1, u1, None]
    assert await store.complete(c1, 1, {"ok": True})
    nxt = await store.claim("w5", ALL_KINDS, lease_seconds=LEASE)
    assert nxt is not None and nxt.id == c2


async def test_a_second_running_item_of_a_config_violates_the_index(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    await store.enqueue("crawl", config_id=c)
    other = await store.enqueue("burst_detection", config_id=c)
    assert await store.claim("w1", ALL_KINDS, lease_seconds=LEASE) is not None
    async with pool.connection() as conn:
        with pytest.raises(pg_errors.UniqueViolation) as caught:
            await conn.execute(
                "UPDATE work_items SET status = 'running', attempt = 1,"
                " lease_expires_at = %s WHERE id = %s",
                (clock.now(), other),
            )
    assert caught.value.diag.constraint_name == "ix_work_items_storage_config_running"
    # Unscoped items are not serialised against anything.
    await store.enqueue("token_cleanup")
    await store.enqueue("noop")
    assert await store.claim("w2", ALL_KINDS, lease_seconds=LEASE) is not None
    assert await store.claim("w3", ALL_KINDS, lease_seconds=LEASE) is not None
    assert await count(pool, "SELECT count(*) FROM work_items WHERE status = 'running'") == 3


class ClaimsLost(NoObserver):
    def __init__(self) -> None:
        self.claims_lost = 0

    def claim_lost(self) -> None:
        self.claims_lost += 1


async def test_two_racing_claims_of_one_config_leave_exactly_one_running(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """The spec's forced overlap: claim A's UPDATE is held open in a transaction, claim B
    passes the running check (it cannot see A's uncommitted running_item_id) and blocks
    on the index; A commits; B must get the violation and return nothing."""
    clock = FakeClock()
    c = await add_config(pool, clock)
    store = make_store(pool, clock)
    item_a = await store.enqueue("crawl", config_id=c)
    await clock.advance(1)
    item_b = await store.enqueue("burst_detection", config_id=c)

    lost = ClaimsLost()
    a_conn = await connect(database_url, "claim-a")
    b_store_pool = AsyncConnectionPool(
        psycopg.conninfo.make_conninfo(database_url, application_name="claim-b"),
        min_size=1,
        max_size=1,
        kwargs={"autocommit": True},
        open=False,
    )
    await b_store_pool.open()
    admin = await connect(database_url, "observer")
    try:
        await a_conn.execute("BEGIN")
        cur = await a_conn.execute(
            QUERIES["items_claim"],
            {
                "worker_ids": ["A"],
                "limit": 1,
                "kinds": ["crawl"],
                "owner": None,
                "lease_seconds": LEASE,
                "now": clock.now(),
            },
        )
        row = await cur.fetchone()
        assert row is not None and row[0] == item_a  # A holds its claim, uncommitted

        # B runs a different kind, so its candidate is the config's other item.
        b_store = make_store(b_store_pool, clock, observer=lost)
        b_claim = asyncio.create_task(b_store.claim("B", ["burst_detection"], lease_seconds=LEASE))
        await wait_until_blocked_on_a_lock(admin, "claim-b")
        assert not b_claim.done()
        await a_conn.execute("COMMIT")
        assert await b_claim is None
        assert lost.claims_lost == 1  # what /metrics counts as a claim lost to the index
    finally:
        await a_conn.close()
        await b_store_pool.close()
        await admin.close()

    assert (
        await count(
            pool,
            "SELECT count(*) FROM work_items WHERE storage_config_id = %s AND status = 'running'",
            c,
        )
        == 1
    )
    item = await store.get(item_b)
    assert item is not None and item.status is Status.QUEUED and item.attempt == 0
    assert await running_item_of(pool, c) == item_a  # B's rolled-back claim named nothing
    # The loser waits for its next wake-up; once A's item ends, B's item is claimable.
    assert await store.complete(item_a, 1)
    again = await store.claim("B", ["burst_detection"], lease_seconds=LEASE)
    assert again is not None and again.id == item_b


async def test_per_user_worker_claims_only_its_users_configs(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    alice = await add_config(pool, clock, owner="alice")
    bob = await add_config(pool, clock, owner="bob")
    await store.enqueue("crawl", config_id=alice)
    await clock.advance(1)
    bobs = await store.enqueue("crawl", config_id=bob)
    await clock.advance(1)
    unscoped = await store.enqueue("token_cleanup")
    got = await store.claim("bob-worker", ALL_KINDS, owner="bob", lease_seconds=LEASE)
    assert got is not None and got.id == bobs
    got = await store.claim("bob-worker", ALL_KINDS, owner="bob", lease_seconds=LEASE)
    assert got is not None and got.id == unscoped
    assert await store.claim("bob-worker", ALL_KINDS, owner="bob", lease_seconds=LEASE) is None


async def test_claim_honours_kinds_and_skips_disabled_configs(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    crawl = await store.enqueue("crawl", config_id=c)
    assert await store.claim("w", ["token_cleanup"], lease_seconds=LEASE) is None
    async with pool.connection() as conn:
        await conn.execute("UPDATE storage_configs SET active = false WHERE id = %s", (c,))
    assert await store.claim("w", ALL_KINDS, lease_seconds=LEASE) is None
    async with pool.connection() as conn:
        await conn.execute("UPDATE storage_configs SET active = true WHERE id = %s", (c,))
    got = await store.claim("w", ["crawl"], lease_seconds=LEASE)
    assert got is not None and got.id == crawl


async def test_a_claimer_passes_over_a_config_whose_head_another_claim_holds(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """Claim A holds config C's head in an open transaction; claim B must take D's item,
    not C's second one (which would block on the index and then lose)."""
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    c_head = await store.enqueue("noop", config_id=c)
    for _ in range(2):
        await clock.advance(1)
        await store.enqueue("noop", config_id=c)
    await clock.advance(1)
    d_item = await store.enqueue("noop", config_id=d)
    a_conn = await connect(database_url, "claim-a")
    try:
        await a_conn.execute("BEGIN")
        cur = await a_conn.execute(
            QUERIES["items_claim"],
            {
                "worker_ids": ["A"],
                "limit": 1,
                "kinds": ALL_KINDS,
                "owner": None,
                "lease_seconds": LEASE,
                "now": clock.now(),
            },
        )
        row = await cur.fetchone()
        assert row is not None and row[0] == c_head
        # The timeout only bounds the failure (a claim blocked on the index).
        b = await asyncio.wait_for(store.claim("B", ALL_KINDS, lease_seconds=LEASE), 30)
        assert b is not None and b.id == d_item
        await a_conn.execute("COMMIT")
    finally:
        await a_conn.close()


def test_every_query_fits_psycopgs_parse_cache() -> None:
    # psycopg re-parses queries longer than 4,096 characters on every call.
    assert {name: len(sql) for name, sql in QUERIES.items() if len(sql) > 4096} == {}
