"""Which writes wake the Workers (the NOTIFY triggers of migrations 0001 and 0017).

Each case ends with a marker notification sent after the write committed: PostgreSQL
delivers notifications in commit order, so what arrives before the marker is exactly
what the write sent, with no wait on a timer for a notification that never comes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import ALL_KINDS, LEASE, make_store
from safelight.work import cancels
from safelight.work.store import QUERIES, WorkStore

pytestmark = pytest.mark.integration

CHANNEL = "safelight_work"
MARKER = "marker"


@pytest.fixture
async def listening(database_url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    try:
        await conn.execute(f"LISTEN {CHANNEL}")
        yield conn
    finally:
        await conn.close()


async def notifications_of(
    listening: psycopg.AsyncConnection[Any],
    pool: AsyncConnectionPool[Any],
    write: Callable[[], Awaitable[object]],
) -> list[str]:
    """The payloads on the channel from ``write``, in order (the markers not included)."""
    await until_marker(listening, pool)  # what the test's set-up sent
    await write()
    return await until_marker(listening, pool)


async def until_marker(
    listening: psycopg.AsyncConnection[Any], pool: AsyncConnectionPool[Any]
) -> list[str]:
    """Send a marker and return what came before it."""
    async with pool.connection() as conn:
        await conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, MARKER))
    payloads: list[str] = []
    async for note in listening.notifies(timeout=30):
        if note.payload == MARKER:
            return payloads
        payloads.append(note.payload)
    raise AssertionError(f"the marker never came; before it: {payloads}")


@pytest.fixture
def store(pool: AsyncConnectionPool[Any]) -> WorkStore:
    return make_store(pool, FakeClock())


async def test_an_enqueue_notifies_once(
    store: WorkStore, pool: AsyncConnectionPool[Any], listening: psycopg.AsyncConnection[Any]
) -> None:
    assert await notifications_of(listening, pool, lambda: store.enqueue("noop")) == [""]


async def test_a_bulk_enqueue_notifies_once_for_the_whole_batch(
    store: WorkStore, pool: AsyncConnectionPool[Any], listening: psycopg.AsyncConnection[Any]
) -> None:
    # Keyless and keyed elements: items_enqueue inserts them through two CTEs, whose
    # rows one statement-level trigger call sees together.
    batch = [{"n": n} for n in range(50)]
    keys = [None if n % 2 else f"k{n}" for n in range(50)]
    notes = await notifications_of(
        listening, pool, lambda: store.enqueue_many("noop", batch, dedup_keys=keys)
    )
    assert notes == [""]


async def test_an_enqueue_that_adds_nothing_notifies_no_one(
    store: WorkStore, pool: AsyncConnectionPool[Any], listening: psycopg.AsyncConnection[Any]
) -> None:
    await store.enqueue("noop", dedup_key="held")
    await store.enqueue_many("noop", [{}], dedup_keys=["held-too"])
    notes = await notifications_of(
        listening,
        pool,
        lambda: store.enqueue_many("noop", [{}, {}], dedup_keys=["held", "held-too"]),
    )
    assert notes == []
    assert (
        await notifications_of(listening, pool, lambda: store.enqueue("noop", dedup_key="held"))
        == []
    )


async def test_an_insert_of_an_item_not_queued_notifies_no_one(
    pool: AsyncConnectionPool[Any], listening: psycopg.AsyncConnection[Any]
) -> None:
    async def insert_finished() -> None:
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO work_items (kind, status, requested_at, finished_at)"
                " VALUES ('noop', 'cancelled', now(), now())"
            )

    assert await notifications_of(listening, pool, insert_finished) == []


async def test_a_claim_notifies_no_one_and_a_scoped_items_end_frees_its_config(
    store: WorkStore, pool: AsyncConnectionPool[Any], listening: psycopg.AsyncConnection[Any]
) -> None:
    config = await add_config(pool, FakeClock())
    await store.enqueue("crawl", config_id=config)
    claims: list[Any] = []

    async def claim() -> None:
        claims.append(await store.claim("w", ALL_KINDS, lease_seconds=LEASE))

    assert await notifications_of(listening, pool, claim) == []
    item = claims[0]
    assert item is not None
    assert await notifications_of(
        listening, pool, lambda: store.complete(item.id, item.attempt)
    ) == [""]


async def test_a_bulk_insert_calls_the_notify_trigger_once_not_once_a_row(
    pool: AsyncConnectionPool[Any],
) -> None:
    # Issue #18, item 2: a row trigger cost a PL/pgSQL call per row of a batch.
    items = [{"payload": {"n": n}, "dedup_key": None if n % 2 else f"k{n}"} for n in range(50)]
    async with pool.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL track_functions = 'pl'")
        cur = await conn.execute(
            QUERIES["items_enqueue"],
            {"items": Jsonb(items), "kind": "noop", "config_id": None, "now": FakeClock().now()},
        )
        assert len(await cur.fetchall()) == 50
        cur = await conn.execute(
            "SELECT coalesce(pg_stat_get_xact_function_calls(p.oid), 0) FROM pg_proc p"
            " WHERE p.proname = 'notify_work_inserted'"
        )
        assert await cur.fetchall() == [(1,)]


async def test_items_enqueue_names_the_identitys_own_sequence(
    pool: AsyncConnectionPool[Any],
) -> None:
    # items_enqueue draws ids from work_items_id_seq by name (a literal, for speed): it
    # must be the sequence of the identity column, or ids would clash with the default's.
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT pg_get_serial_sequence('work_items', 'id')::regclass::text"
        )
        assert await cur.fetchone() == ("work_items_id_seq",)
    assert "nextval('work_items_id_seq'::regclass)" in QUERIES["items_enqueue"]


async def test_a_cancel_of_a_running_item_notifies_its_attempt_and_of_a_queued_one_no_one(
    store: WorkStore, pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """ADR 0070: "id:attempt" on the cancel channel, sent as the flag commits."""
    conn = await psycopg.AsyncConnection.connect(database_url, autocommit=True)
    try:
        await conn.execute(f"LISTEN {cancels.CHANNEL}")

        async def heard(write: Callable[[], Awaitable[object]]) -> list[str]:
            await write()
            async with pool.connection() as marker:
                await marker.execute("SELECT pg_notify(%s, %s)", (cancels.CHANNEL, MARKER))
            payloads: list[str] = []
            async for note in conn.notifies(timeout=30):
                if note.payload == MARKER:
                    return payloads
                payloads.append(note.payload)
            raise AssertionError(f"the marker never came; before it: {payloads}")

        running = await store.enqueue("noop")
        queued = await store.enqueue("noop")
        claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
        assert claimed is not None and claimed.id == running
        assert await heard(lambda: store.request_cancel(queued)) == []
        assert await heard(lambda: store.request_cancel(running)) == [
            f"{running}:{claimed.attempt}"
        ]
        assert await heard(lambda: store.request_cancel(running)) == [
            f"{running}:{claimed.attempt}"
        ]  # asked again: heard again
    finally:
        await conn.close()
