"""Retries on real PostgreSQL (ADR 0024): a retried attempt's item goes back to queued
with a not-before time, fenced like every write; the claim passes it over until it is
due (blocking neither other configs nor its own config's later items) and then takes it
in its place; retries and stalls are counted apart; an operator's ``items retry``; the
Worker's next due time."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from uuid import UUID

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    DatabaseTimeClock,
    make_store,
    running_item_mismatches,
)
from safelight.work.model import RecoveryReport, RetriedCount, RetryResult, Status
from safelight.work.store import WorkStore

pytestmark = pytest.mark.integration

EIO = "OSError: [Errno 5] Input/output error"


async def attempt_outcomes(pool: AsyncConnectionPool[Any], item_id: int) -> list[Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT attempt, outcome::text, ended_at FROM work_attempts"
            " WHERE work_item_id = %s ORDER BY attempt",
            (item_id,),
        )
        return list(await cur.fetchall())


async def claim_id(store: WorkStore, worker: str = "w") -> int | None:
    item = await store.claim(worker, ALL_KINDS, lease_seconds=LEASE)
    return None if item is None else item.id


async def waiting(store: WorkStore, item_id: int, delay: float = 30.0) -> None:
    """Claim ``item_id`` (the oldest eligible item) and retry it after ``delay``."""
    item = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert item is not None and item.id == item_id
    assert await store.retry_later(item_id, item.attempt, EIO, delay) is True


async def test_a_retry_requeues_in_place_until_its_backoff_has_passed(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    requested = (await store.get(item_id)).requested_at  # type: ignore[union-attr]
    assert await store.claim("w1", ALL_KINDS, lease_seconds=LEASE) is not None
    await clock.advance(2)
    assert await store.retry_later(item_id, 1, EIO, 30.0) is True
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.retries, item.stalls, item.requested_at, item.error) == (
        Status.QUEUED,
        1,
        0,
        requested,
        EIO,
    )
    assert item.not_before == clock.now() + timedelta(seconds=30)
    assert (item.lease_expires_at, item.worker_id, item.finished_at) == (None, None, None)
    assert await attempt_outcomes(pool, item_id) == [(1, "failed", clock.now())]
    # Written once: the attempt no longer runs.
    assert await store.retry_later(item_id, 1, EIO, 30.0) is False

    await clock.advance(29.999)
    assert await claim_id(store) is None
    await clock.advance(0.001)
    again = await store.claim("w2", ALL_KINDS, lease_seconds=LEASE)
    assert again is not None and (again.id, again.attempt, again.retries) == (item_id, 2, 1)
    assert (again.not_before, again.error) == (None, None)  # a new attempt starts clean


async def test_the_backoff_is_added_to_the_databases_clock_in_one_stamp(
    pool: AsyncConnectionPool[Any],
) -> None:
    """With the database's clock (production), not_before is the attempt's end plus the
    backoff, both the statement's one stamp (ADR 0015)."""
    store = make_store(pool, DatabaseTimeClock())
    item_id = await store.enqueue("noop")
    await waiting(store, item_id, 12.5)
    item = await store.get(item_id)
    ((_, _, ended_at),) = await attempt_outcomes(pool, item_id)
    assert item is not None and item.not_before == ended_at + timedelta(seconds=12.5)
    assert await claim_id(store) is None  # not due for 12.5 s of the database's time


async def test_a_waiting_item_blocks_neither_other_configs_nor_its_configs_later_items(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    a, b = await add_config(pool, clock), await add_config(pool, clock)
    first = await store.enqueue("crawl", config_id=a)
    await waiting(store, first, 60.0)
    await clock.advance(1)
    a_later = await store.enqueue("burst_detection", config_id=a)
    b_item = await store.enqueue("crawl", config_id=b)
    unscoped = await store.enqueue("token_cleanup")

    assert await claim_id(store, "w1") == a_later  # its config's older item waits
    assert await claim_id(store, "w2") == b_item
    assert await claim_id(store, "w3") == unscoped
    assert await claim_id(store, "w4") is None
    for item_id in (a_later, b_item, unscoped):
        item = await store.get(item_id)
        assert item is not None and await store.complete(item_id, item.attempt)

    await clock.advance(59)
    a_last = await store.enqueue("burst_detection", config_id=a)
    # Once due it is taken in its place, before the config's items requested after it.
    assert await claim_id(store) == first
    assert await claim_id(store) is None  # its config is busy again
    assert await running_item_mismatches(pool) == []
    item = await store.get(first)
    assert item is not None and await store.complete(first, item.attempt)
    assert await claim_id(store) == a_last


async def test_the_second_look_passes_waiting_items_over_too(
    pool: AsyncConnectionPool[Any],
) -> None:
    """With the head of the queue full of a busy config's items, the claim takes the
    idle configs' heads and the unscoped head: a waiting item is none of them."""
    clock = FakeClock()
    store = make_store(pool, clock)
    busy, idle = await add_config(pool, clock), await add_config(pool, clock)
    waiting_scoped = await store.enqueue("crawl", config_id=idle)
    await waiting(store, waiting_scoped, 60.0)
    waiting_unscoped = await store.enqueue("token_cleanup")
    await waiting(store, waiting_unscoped, 60.0)
    running = await store.enqueue("crawl", config_id=busy)
    assert await claim_id(store, "runner") == running
    await store.enqueue_many("burst_detection", [{} for _ in range(20)], config_id=busy)
    await clock.advance(1)
    idle_later = await store.enqueue("burst_detection", config_id=idle)
    unscoped_later = await store.enqueue("token_cleanup", dedup_key="later")

    assert await claim_id(store, "w1") == idle_later
    assert await claim_id(store, "w2") == unscoped_later
    assert await claim_id(store, "w3") is None
    for item_id in (idle_later, unscoped_later):
        item = await store.get(item_id)
        assert item is not None and await store.complete(item_id, item.attempt)
    await clock.advance(59)
    assert {await claim_id(store, "w4"), await claim_id(store, "w5")} == {
        waiting_scoped,
        waiting_unscoped,
    }


async def test_a_lost_attempts_retry_changes_nothing(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    assert await claim_id(store) == item_id
    assert await store.retry_later(item_id, 2, EIO, 30.0) is False  # another attempt's
    await clock.advance(LEASE + 1)
    assert await store.recover_expired_leases() == RecoveryReport(requeued=1)
    # The lease expired: the first attempt lost the item, to the queue...
    assert await store.retry_later(item_id, 1, EIO, 30.0) is False
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.retries, item.stalls, item.not_before) == (
        Status.QUEUED,
        0,
        1,
        None,
    )
    # ... and to the next attempt, which its late write does not touch either.
    again = await store.claim("w2", ALL_KINDS, lease_seconds=LEASE)
    assert again is not None and again.attempt == 2
    assert await store.retry_later(item_id, 1, EIO, 30.0) is False
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.attempt, item.retries, item.not_before, item.worker_id) == (
        Status.RUNNING,
        2,
        0,
        None,
        "w2",
    )
    assert [r[1] for r in await attempt_outcomes(pool, item_id)] == ["stalled", None]


async def test_a_retry_whose_dedup_key_was_queued_again_is_superseded(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    old = await store.enqueue("token_cleanup", dedup_key="daily")
    assert await claim_id(store) == old
    new = await store.enqueue("token_cleanup", dedup_key="daily")
    assert await store.retry_later(old, 1, EIO, 30.0) is True
    old_item, new_item = await store.get(old), await store.get(new)
    assert old_item is not None and new_item is not None
    assert (old_item.status, old_item.not_before, old_item.finished_at) == (
        Status.CANCELLED,
        None,
        clock.now(),
    )
    assert old_item.error == "superseded: its dedup key already had a queued item"
    assert [r[1] for r in await attempt_outcomes(pool, old)] == ["superseded"]
    assert new_item.status is Status.QUEUED


async def test_a_dedup_key_waiting_for_its_retry_holds_its_key(
    pool: AsyncConnectionPool[Any],
) -> None:
    """A periodic kind enqueued while its last item waits adds nothing: the waiting
    item is the queued one of its key, and does the work when due."""
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("token_cleanup", dedup_key="daily")
    await waiting(store, item_id)
    assert await store.enqueue("token_cleanup", dedup_key="daily") == item_id


async def test_stalls_and_retries_are_counted_apart(pool: AsyncConnectionPool[Any]) -> None:
    """Neither count uses up the other: with max_stalls 2, two stalls and any number of
    retries leave the item to the last stall, which fails it as stalled."""
    clock = FakeClock()
    store = make_store(pool, clock, max_stalls=2)
    item_id = await store.enqueue("noop")
    for n in (1, 2, 3):
        await clock.advance(30)
        await waiting(store, item_id, 30.0)
        item = await store.get(item_id)
        assert item is not None and (item.retries, item.stalls) == (n, 0)
    await clock.advance(30)
    assert await claim_id(store) == item_id
    await clock.advance(LEASE + 1)
    assert await store.recover_expired_leases() == RecoveryReport(requeued=1)
    item = await store.get(item_id)
    assert item is not None and (item.status, item.retries, item.stalls) == (Status.QUEUED, 3, 1)
    claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.attempt == 5
    assert await store.retry(item_id, 5, "OperationalError: gone") is True
    item = await store.get(item_id)
    assert item is not None and (item.status, item.retries, item.stalls) == (Status.FAILED, 3, 2)
    assert item.error == "interrupted 2 times; last: OperationalError: gone"
    assert [r[1] for r in await attempt_outcomes(pool, item_id)] == [
        "failed",
        "failed",
        "failed",
        "stalled",
        "stalled",
    ]


async def test_cancelling_a_waiting_item_ends_its_wait(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    await waiting(store, item_id)
    assert (await store.request_cancel(item_id)).value == "cancelled"
    item = await store.get(item_id)
    assert item is not None and (item.status, item.not_before) == (Status.CANCELLED, None)


async def test_only_a_queued_item_may_have_a_not_before(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    async with pool.connection() as conn:
        with pytest.raises(psycopg.errors.CheckViolation, match="work_items_not_before_queued"):
            await conn.execute(
                "UPDATE work_items SET status = 'cancelled', finished_at = now(),"
                " not_before = now() WHERE id = %s",
                (item_id,),
            )


# --- an operator's retry -----------------------------------------------------------------


async def failed_item(store: WorkStore, kind: str = "noop", **enqueue: Any) -> int:
    item_id = await store.enqueue(kind, **enqueue)
    assert await claim_id(store) == item_id
    assert await store.fail(item_id, 1, "ValueError: bad")
    return item_id


async def test_items_retry_puts_a_failed_item_back_due_now_with_fresh_counts(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    requested = (await store.get(item_id)).requested_at  # type: ignore[union-attr]
    for _ in range(2):
        await waiting(store, item_id)
        await clock.advance(30)
    assert await claim_id(store) == item_id
    await clock.advance(LEASE + 1)
    await store.recover_expired_leases()
    assert await claim_id(store) == item_id
    assert await store.fail(item_id, 4, f"failed 3 times; last: {EIO}")
    await clock.advance(3600)
    later = await store.enqueue("noop")

    assert await store.retry_failed(item_id) is RetryResult.RETRIED
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.retries, item.stalls, item.not_before) == (Status.QUEUED, 0, 0, None)
    assert (item.finished_at, item.result, item.requested_at) == (None, None, requested)
    assert item.error == f"failed 3 times; last: {EIO}"  # kept until it is claimed
    assert item.attempt == 4  # the history goes on
    assert await claim_id(store) == item_id  # due at once, in its place
    assert await claim_id(store, "w2") == later


async def test_items_retry_refuses_what_it_cannot_retry(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    keyed = await failed_item(store, "token_cleanup", dedup_key="daily")
    holder = await store.enqueue("token_cleanup", dedup_key="daily")
    queued = await store.enqueue("noop")
    assert await store.retry_failed(queued) is RetryResult.NOT_FAILED
    assert await store.retry_failed(999_999) is RetryResult.NOT_FOUND
    assert await store.retry_failed(keyed) is RetryResult.KEY_QUEUED
    assert (await store.get(keyed)).status is Status.FAILED  # type: ignore[union-attr]
    assert (await store.get(holder)).status is Status.QUEUED  # type: ignore[union-attr]
    assert (await store.get(queued)).status is Status.QUEUED  # type: ignore[union-attr]


async def test_items_retry_failed_requeues_the_matching_failed_items(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    a, b = await add_config(pool, clock), await add_config(pool, clock)
    noop_a = await failed_item(store, "noop", config_id=a)
    crawl_a = await failed_item(store, "crawl", config_id=a)
    noop_b = await failed_item(store, "noop", config_id=b)
    noop = await failed_item(store, "noop")
    succeeded = await store.enqueue("noop")
    assert await claim_id(store) == succeeded and await store.complete(succeeded, 1)

    assert await store.retry_failed_matching(kind="noop", config_id=a) == RetriedCount(1, 0)
    assert await store.retry_failed_matching(config_id=b) == RetriedCount(1, 0)
    assert await store.retry_failed_matching(kind="crawl") == RetriedCount(1, 0)
    statuses = {i: (await store.get(i)).status for i in (noop_a, crawl_a, noop_b, noop)}  # type: ignore[union-attr]
    assert statuses == {
        noop_a: Status.QUEUED,
        crawl_a: Status.QUEUED,
        noop_b: Status.QUEUED,
        noop: Status.FAILED,
    }
    assert await store.retry_failed_matching() == RetriedCount(1, 0)
    assert await store.retry_failed_matching() == RetriedCount(0, 0)
    assert (await store.get(succeeded)).status is Status.SUCCEEDED  # type: ignore[union-attr]


async def test_items_retry_failed_requeues_one_item_per_dedup_key(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    older = await failed_item(store, "token_cleanup", dedup_key="daily")
    newer = await failed_item(store, "token_cleanup", dedup_key="daily")
    held = await failed_item(store, "token_cleanup", dedup_key="weekly")
    free = await failed_item(store, "token_cleanup")
    holder = await store.enqueue("token_cleanup", dedup_key="weekly")

    assert await store.retry_failed_matching(kind="token_cleanup") == RetriedCount(2, 2)
    statuses = {i: (await store.get(i)).status for i in (older, newer, held, holder, free)}  # type: ignore[union-attr]
    assert statuses == {
        older: Status.FAILED,
        newer: Status.QUEUED,
        held: Status.FAILED,
        holder: Status.QUEUED,
        free: Status.QUEUED,
    }


# --- the next due time -------------------------------------------------------------------


async def test_the_next_due_time_is_that_of_the_earliest_wait_ahead(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    alice, bob = await add_config(pool, clock, "alice"), await add_config(pool, clock, "bob")
    assert await store.next_due_seconds(ALL_KINDS) is None
    later = await store.enqueue("crawl", config_id=alice)
    await waiting(store, later, 90.0)
    sooner = await store.enqueue("noop")
    await waiting(store, sooner, 40.0)
    bobs = await store.enqueue("crawl", config_id=bob)
    await waiting(store, bobs, 10.0)
    await clock.advance(5)

    assert await store.next_due_seconds(ALL_KINDS) == 5.0
    assert await store.next_due_seconds(ALL_KINDS, "alice") == 35.0  # bob's is not hers
    assert await store.next_due_seconds(["crawl"], "alice") == 85.0
    assert await store.next_due_seconds(["burst_detection"]) is None
    await clock.advance(35)
    # Due ones are the claim's: only the waits still ahead count.
    assert await store.next_due_seconds(ALL_KINDS, "alice") == 50.0
    await disable(pool, alice)
    assert await store.next_due_seconds(ALL_KINDS, "alice") is None


async def disable(pool: AsyncConnectionPool[Any], config_id: UUID) -> None:
    async with pool.connection() as conn:
        await conn.execute("UPDATE storage_configs SET active = false WHERE id = %s", (config_id,))
