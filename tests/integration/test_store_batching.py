"""ADR 0009: claims and outcomes made together go out as one statement, and each call
still means what it meant alone."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import ALL_KINDS, LEASE, make_store
from safelight.work.model import Status
from safelight.work.store import MAX_CLAIM_BATCH, QUERIES, claim_query

pytestmark = pytest.mark.integration


async def transactions_of(pool: AsyncConnectionPool[Any], ids: list[int]) -> set[str]:
    """The transactions that last wrote these rows (xmin): one means one statement."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT DISTINCT xmin::text FROM work_items WHERE id = ANY(%s)", (ids,)
        )
        return {row[0] for row in await cur.fetchall()}


async def test_claims_made_together_take_one_item_per_config_in_one_statement(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    ids = []
    for kind, config in [("crawl", c), ("noop", None), ("crawl", c), ("noop", None), ("crawl", d)]:
        ids.append(await store.enqueue(kind, config_id=config))
        await clock.advance(1)
    c1, u1, c2, u2, d1 = ids

    workers = ["w1", "w2", "w3", "w4", "w5"]
    got = await asyncio.gather(*(store.claim(w, ALL_KINDS, lease_seconds=LEASE) for w in workers))

    # Oldest eligible first, the nth to the nth caller; C's second item waits for C.
    assert [g.id if g else None for g in got] == [c1, u1, u2, d1, None]
    assert [g.worker_id if g else None for g in got] == ["w1", "w2", "w3", "w4", None]
    assert len(await transactions_of(pool, [c1, u1, u2, d1])) == 1
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT work_item_id, worker_id, attempt FROM work_attempts ORDER BY work_item_id"
        )
        history = await cur.fetchall()
        cur = await conn.execute("SELECT status::text FROM work_items WHERE id = %s", (c2,))
        c2_status = await cur.fetchone()
    assert history == sorted([(c1, "w1", 1), (u1, "w2", 1), (u2, "w3", 1), (d1, "w4", 1)])
    assert c2_status == ("queued",)


async def test_any_worker_id_and_kind_reach_the_claim_as_they_are(
    pool: AsyncConnectionPool[Any],
) -> None:
    """Worker ids and kinds go to the claim as array literals (core.sql.text_array)."""
    clock = FakeClock()
    store = make_store(pool, clock)
    ids = [await store.enqueue("noop") for _ in range(4)]
    workers = ['nas "1"', "back\\slash", "{a,b}", "NULL"]
    got = await asyncio.gather(
        *(store.claim(w, ["noop", 'odd "kind"'], lease_seconds=LEASE) for w in workers)
    )
    assert [g.id if g else None for g in got] == ids
    assert [g.worker_id if g else None for g in got] == workers
    assert await store.claim("w", ['odd "kind"', "x\\"], lease_seconds=LEASE) is None


async def test_workers_left_over_by_the_first_look_claim_again_at_once(
    pool: AsyncConnectionPool[Any],
) -> None:
    """The oldest 16 queued hold one eligible item (D's); E's lies beyond them. A batch
    of two takes D's, then looks again for the second Worker and finds E's."""
    clock = FakeClock()
    store = make_store(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    e = await add_config(pool, clock, root="/e")
    await store.enqueue("crawl", config_id=c)
    busy = await store.claim("w0", ALL_KINDS, lease_seconds=LEASE)
    assert busy is not None
    for _ in range(15):
        await clock.advance(1)
        await store.enqueue("noop", config_id=c)
    await clock.advance(1)
    d1 = await store.enqueue("noop", config_id=d)
    for _ in range(10):
        await clock.advance(1)
        await store.enqueue("noop", config_id=c)
    await clock.advance(1)
    e1 = await store.enqueue("noop", config_id=e)

    got = await asyncio.gather(
        store.claim("w1", ALL_KINDS, lease_seconds=LEASE),
        store.claim("w2", ALL_KINDS, lease_seconds=LEASE),
    )
    assert [g.id if g else None for g in got] == [d1, e1]
    assert len(await transactions_of(pool, [d1, e1])) == 2  # two looks, two statements


async def test_outcomes_written_together_go_out_in_one_statement_each_fenced(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    ids = [await store.enqueue("noop") for _ in range(4)]
    claimed = await asyncio.gather(
        *(store.claim(f"w{n}", ALL_KINDS, lease_seconds=LEASE) for n in range(4))
    )
    items = [item for item in claimed if item is not None]
    assert [i.id for i in items] == ids
    a, b, c, d = items

    applied = await asyncio.gather(
        store.complete(a.id, a.attempt, {"files": 3}),
        store.fail(b.id, b.attempt, "corrupt JPEG"),
        store.cancel(c.id, c.attempt),
        store.complete(d.id, d.attempt + 1),  # a stale attempt: fenced out
    )
    assert applied == [True, True, True, False]  # type: ignore[comparison-overlap]  # a list
    assert len(await transactions_of(pool, [a.id, b.id, c.id])) == 1
    rows = {}
    for item in items:
        found = await store.get(item.id)
        assert found is not None
        rows[item.id] = (found.status, found.result, found.error)
    assert rows == {
        a.id: (Status.SUCCEEDED, {"files": 3}, None),
        b.id: (Status.FAILED, None, "corrupt JPEG"),
        c.id: (Status.CANCELLED, None, "cancelled while running"),
        d.id: (Status.RUNNING, None, None),
    }
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT work_item_id, outcome::text, ended_at IS NOT NULL FROM work_attempts"
            " ORDER BY work_item_id"
        )
        history = await cur.fetchall()
    assert history == [
        (a.id, "succeeded", True),
        (b.id, "failed", True),
        (c.id, "cancelled", True),
        (d.id, None, False),
    ]


def test_the_claim_is_written_for_each_batch_size_and_nothing_else_is_spliced() -> None:
    template = QUERIES["items_claim"]
    assert template.count("%(limit)s") == 4
    for n in (1, MAX_CLAIM_BATCH):
        sql = claim_query(n)
        assert "%(limit)s" not in sql
        assert sql == template.replace("%(limit)s", str(n))
        assert len(sql) <= 4096  # psycopg's parse cache
    with pytest.raises(KeyError):
        claim_query(MAX_CLAIM_BATCH + 1)


async def test_outcomes_are_never_prepared_while_claims_are(database_url: str) -> None:
    """A plan for attempts_finish cached while work_attempts was small scanned the whole
    history on every outcome (docs/benchmarks.md, 3): it is planned anew each time."""
    one = await open_pool(database_url, min_size=1, max_size=1)
    try:
        clock = FakeClock()
        store = make_store(one, clock)
        for _ in range(8):  # past psycopg's threshold of 5 uses before it prepares
            await store.enqueue("noop")
            item = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
            assert item is not None
            assert await store.complete(item.id, item.attempt)
        async with one.connection() as conn:
            cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
            prepared = [row[0] for row in await cur.fetchall()]
    finally:
        await one.close()
    # Compared by their description lines: the server holds them with $n placeholders.
    claim, finish = (QUERIES[name].splitlines()[0] for name in ("items_claim", "attempts_finish"))
    assert any(statement.startswith(claim) for statement in prepared)
    assert not any(statement.startswith(finish) for statement in prepared)
