"""The store's enqueue: dedup, validation, and nothing written on bad input."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import connect
from safelight.handlers import KIND_SPECS
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    claimed,
    count,
    make_store,
    wait_until_blocked_on_a_lock,
)
from safelight.work.errors import AttemptLost, InvalidWorkItem
from safelight.work.model import Status
from safelight.work.store import QUERIES, WorkStore

pytestmark = pytest.mark.integration


async def test_enqueue_records_a_queued_item(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock)
    item_id = await store.enqueue("crawl", config_id=config, payload={"full": True})
    item = await store.get(item_id)
    assert item is not None
    assert item.kind == "crawl"
    assert item.storage_config_id == config
    assert item.payload == {"full": True}
    assert item.status is Status.QUEUED
    assert item.requested_at == clock.now()
    assert (item.attempt, item.stalls, item.worker_id) == (0, 0, None)


async def test_same_dedup_key_returns_the_queued_item(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    first = await store.enqueue("token_cleanup", dedup_key="daily")
    second = await store.enqueue("token_cleanup", dedup_key="daily", payload={"other": 1})
    assert second == first
    assert await count(pool, "SELECT count(*) FROM work_items") == 1
    # Once the holder is claimed, the key is free for a new queued item.
    claimed = await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.id == first
    third = await store.enqueue("token_cleanup", dedup_key="daily")
    assert third != first
    assert await count(pool, "SELECT count(*) FROM work_items") == 2


async def test_enqueue_many_adds_every_item(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    ids = await store.enqueue_many("noop", [{"n": i} for i in range(50)])
    assert len(set(ids)) == 50
    assert await count(pool, "SELECT count(*) FROM work_items WHERE status = 'queued'") == 50
    # Each id is its own payload's, and the batch is queued in its order, in one statement.
    for n, item_id in enumerate(ids):
        item = await store.get(item_id)
        assert item is not None
        assert (item.payload, item.requested_at, item.dedup_key) == ({"n": n}, clock.now(), None)
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(DISTINCT xmin::text) FROM work_items")
        assert await cur.fetchone() == (1,)
    taken = [await store.claim("w", ALL_KINDS, lease_seconds=LEASE) for _ in range(3)]
    assert [t.id if t else None for t in taken] == ids[:3]
    assert await store.enqueue_many("noop", []) == []


async def test_enqueue_many_of_a_config_checks_it_first(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock)
    disabled = await add_config(pool, clock, active=False)
    ids = await store.enqueue_many("crawl", [{}, {}], config_id=config)
    for item_id in ids:
        item = await store.get(item_id)
        assert item is not None and item.storage_config_id == config
    with pytest.raises(InvalidWorkItem, match="is disabled"):
        await store.enqueue_many("crawl", [{}], config_id=disabled)
    with pytest.raises(InvalidWorkItem, match="needs a storage config"):
        await store.enqueue_many("crawl", [{}])
    assert await count(pool, "SELECT count(*) FROM work_items") == 2


async def test_enqueue_many_honours_dedup_keys_within_the_batch_and_against_the_queue(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    held = await store.enqueue("noop", dedup_key="held", payload={"first": True})
    ids = await store.enqueue_many(
        "noop",
        [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}],
        dedup_keys=["a", None, "a", "held", "b"],
    )
    a, free, again, held_again, b = ids
    assert again == a and held_again == held
    assert len({a, free, held, b}) == 4
    assert await count(pool, "SELECT count(*) FROM work_items") == 4
    item = await store.get(a)
    assert item is not None and (item.payload, item.dedup_key) == ({"n": 0}, "a")  # the first
    item = await store.get(held)
    assert item is not None and item.payload == {"first": True}  # left as it was
    # Once its holder is claimed, a key is free again.
    taken = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert taken is not None and taken.id == held
    [new] = await store.enqueue_many("noop", [{}], dedup_keys=["held"])
    assert new not in ids
    with pytest.raises(InvalidWorkItem, match="must not be blank"):
        await store.enqueue_many("noop", [{}, {}], dedup_keys=["ok", " "])
    with pytest.raises(ValueError, match="2 payloads but 1 dedup keys"):
        await store.enqueue_many("noop", [{}, {}], dedup_keys=["x"])
    assert await count(pool, "SELECT count(*) FROM work_items") == 5


async def test_enqueue_many_finds_a_holder_that_committed_while_it_waited(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """A queued holder of a key, committed after the statement's snapshot: the insert
    waits for it and then adds nothing, and the look-up in the same statement cannot see
    it; the store asks again and returns the holder's id."""
    clock = FakeClock()
    holder = await connect(database_url, "holder")
    bulk_pool = AsyncConnectionPool(
        psycopg.conninfo.make_conninfo(database_url, application_name="bulk"),
        min_size=1,
        max_size=1,
        kwargs={"autocommit": True},
        open=False,
    )
    await bulk_pool.open()
    admin = await connect(database_url, "observer")
    try:
        await holder.execute("BEGIN")
        cur = await holder.execute(
            QUERIES["item_enqueue"],
            {
                "kind": "noop",
                "config_id": None,
                "dedup_key": "k",
                "payload": Jsonb({}),
                "now": clock.now(),
            },
        )
        row = await cur.fetchone()
        assert row is not None
        holder_id = row[0]
        bulk = asyncio.create_task(
            make_store(bulk_pool, clock).enqueue_many("noop", [{}, {}], dedup_keys=[None, "k"])
        )
        await wait_until_blocked_on_a_lock(admin, "bulk")
        await holder.execute("COMMIT")
        free, keyed = await bulk
    finally:
        await holder.close()
        await bulk_pool.close()
        await admin.close()
    assert keyed == holder_id
    assert free != holder_id
    assert await count(pool, "SELECT count(*) FROM work_items") == 2


@pytest.mark.parametrize(
    ("kind", "scoped", "payload", "message"),
    [
        ("no_such_kind", False, {}, "unknown kind 'no_such_kind'"),
        ("noop", False, [1, 2], "must be a JSON object"),
        ("noop", False, "text", "must be a JSON object"),
        ("crawl", False, {}, "needs a storage config"),
        ("token_cleanup", True, {}, "cannot name a storage config"),
    ],
)
async def test_bad_enqueue_is_refused_and_writes_nothing(
    pool: AsyncConnectionPool[Any], kind: str, scoped: bool, payload: Any, message: str
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    config = await add_config(pool, clock) if scoped else None
    with pytest.raises(InvalidWorkItem, match=message):
        await store.enqueue(kind, config_id=config, payload=payload)
    assert await count(pool, "SELECT count(*) FROM work_items") == 0


async def test_enqueue_for_missing_or_disabled_config_is_refused(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    disabled = await add_config(pool, clock, active=False)
    with pytest.raises(InvalidWorkItem, match="does not exist"):
        await store.enqueue("crawl", config_id=uuid.uuid4())
    with pytest.raises(InvalidWorkItem, match="is disabled"):
        await store.enqueue("crawl", config_id=disabled)
    assert await count(pool, "SELECT count(*) FROM work_items") == 0


async def test_follow_up_work_is_queued_in_the_fenced_transaction_or_not_at_all(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock)
    crawl = await claimed(store, c)

    async with store.fenced(crawl, 1) as conn:
        follow_up = await store.enqueue_in(
            conn, "burst_detection", config_id=c, dedup_key=f"burst_detection:{c}"
        )
        with pytest.raises(InvalidWorkItem, match="unknown kind"):
            await store.enqueue_in(conn, "no_such_kind")
    queued = await store.get(follow_up)
    assert queued is not None and queued.status is Status.QUEUED

    await clock.advance(LEASE + 1)
    assert (await store.recover_expired_leases()).requeued == 1  # the attempt lost it
    with pytest.raises(AttemptLost):
        async with store.fenced(crawl, 1) as conn:
            await store.enqueue_in(conn, "noop", config_id=c, dedup_key="never")
    assert await count(pool, "SELECT count(*) FROM work_items WHERE dedup_key = 'never'") == 0


def _checked_store(pool: AsyncConnectionPool[Any], clock: FakeClock) -> WorkStore:
    """A store with the real kinds, as a Worker or the CLI makes it: payloads checked."""
    return WorkStore(pool, clock, KIND_SPECS, max_stalls=3)


@pytest.mark.parametrize(
    ("kind", "payload", "message"),
    [
        ("noop", {"seconds": "abc"}, 'enqueue noop: payload field "seconds": expected a number'),
        ("noop", {"seconds": float("nan")}, "enqueue noop: payload is not JSON"),
        ("noop", {"sleep": 1}, 'enqueue noop: payload field "sleep" is not one it takes'),
        ("proxy_deletion", {}, "enqueue proxy_deletion: payload: it takes exactly one of"),
        ("token_cleanup", {"other": 1}, 'enqueue token_cleanup: payload field "other" is not'),
    ],
)
async def test_a_payload_its_kind_does_not_take_is_refused_and_writes_nothing(
    pool: AsyncConnectionPool[Any], kind: str, payload: dict[str, Any], message: str
) -> None:
    clock = FakeClock()
    store = _checked_store(pool, clock)
    with pytest.raises(InvalidWorkItem) as refused:
        await store.enqueue(kind, payload=payload)
    assert str(refused.value).startswith(message)
    with pytest.raises(InvalidWorkItem):
        await store.enqueue(kind, payload=payload, dedup_key="once")
    assert await count(pool, "SELECT count(*) FROM work_items") == 0


async def test_enqueue_many_with_one_bad_payload_writes_none_of_them(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = _checked_store(pool, clock)
    good = [{"seconds": i} for i in range(10)]
    with pytest.raises(InvalidWorkItem, match=r'^enqueue noop: payload field "seconds": expected'):
        await store.enqueue_many("noop", [*good, {"seconds": "x"}, *good])
    assert await count(pool, "SELECT count(*) FROM work_items") == 0
    # The check is not what stops a good batch.
    assert len(await store.enqueue_many("noop", good)) == 10
    assert await count(pool, "SELECT count(*) FROM work_items") == 10


async def test_follow_up_work_with_a_bad_payload_is_refused_inside_the_transaction(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = _checked_store(pool, clock)
    config = await add_config(pool, clock)
    async with pool.connection() as conn:
        with pytest.raises(InvalidWorkItem, match=r"^enqueue burst_detection: payload field"):
            async with conn.transaction():
                await store.enqueue_in(conn, "noop", payload={"seconds": 1})
                await store.enqueue_in(
                    conn, "burst_detection", config_id=config, payload={"now": True}
                )
    assert await count(pool, "SELECT count(*) FROM work_items") == 0


async def test_a_payload_that_fits_is_stored_as_given(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = _checked_store(pool, clock)
    item_id = await store.enqueue("noop", payload={"seconds": 2, "result": {"a": [1]}})
    item = await store.get(item_id)
    assert item is not None and item.payload == {"seconds": 2, "result": {"a": [1]}}
