"""Fencing, lease recovery, cancellation and retention of the store, on real PostgreSQL."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import ALL_KINDS, LEASE, count, make_store
from safelight.work.errors import AttemptLost
from safelight.work.model import Beat, CancelResult, RecoveryReport, Status

pytestmark = pytest.mark.integration


async def _attempt_rows(pool: AsyncConnectionPool[Any], item_id: int) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT attempt, worker_id, outcome::text, claimed_at, ended_at FROM work_attempts"
            " WHERE work_item_id = %s ORDER BY attempt",
            (item_id,),
        )
        return list(await cur.fetchall())


async def test_complete_and_fail_are_fenced_by_attempt(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    item = await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert item is not None
    # A write of another attempt changes nothing.
    assert await store.complete(item_id, 2, {"x": 1}) is False
    assert await store.fail(item_id, 0, "boom") is False
    assert await store.release(item_id, 5) is False
    assert await store.cancel(item_id, 7) is False
    assert await store.heartbeat(item_id, 9, LEASE) is Beat.LOST
    assert (await store.get(item_id)).status is Status.RUNNING  # type: ignore[union-attr]
    await clock.advance(3)
    assert await store.complete(item_id, 1, {"x": 1}) is True
    done = await store.get(item_id)
    assert done is not None
    assert done.status is Status.SUCCEEDED and done.result == {"x": 1}
    assert done.finished_at == clock.now() and done.lease_expires_at is None
    # Already finished: a second write of the same attempt does not apply.
    assert await store.fail(item_id, 1, "late") is False
    assert (await store.get(item_id)).status is Status.SUCCEEDED  # type: ignore[union-attr]
    rows = await _attempt_rows(pool, item_id)
    assert [(r[0], r[1], r[2]) for r in rows] == [(1, "w1", "succeeded")]
    assert rows[0][4] == clock.now()


async def test_fail_records_the_error(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert await store.fail(item_id, 1, "ValueError: bad")
    item = await store.get(item_id)
    assert item is not None and item.status is Status.FAILED and item.error == "ValueError: bad"
    assert [r[2] for r in await _attempt_rows(pool, item_id)] == ["failed"]


async def test_heartbeat_renews_the_lease(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    await clock.advance(50)
    assert await store.heartbeat(item_id, 1, LEASE) is Beat.ALIVE
    await clock.advance(50)  # 100 s after the claim, 50 s after the beat
    assert await store.recover_expired_leases() == RecoveryReport()
    item = await store.get(item_id)
    assert item is not None and item.status is Status.RUNNING
    assert item.lease_expires_at == clock.now() + timedelta(seconds=10)


async def test_release_requeues_without_a_stall(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    requested = (await store.get(item_id)).requested_at  # type: ignore[union-attr]
    await clock.advance(5)
    await store.claim("w1", ALL_KINDS, lease_seconds=LEASE)
    assert await store.release(item_id, 1)
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.stalls, item.requested_at) == (Status.QUEUED, 0, requested)
    assert [r[2] for r in await _attempt_rows(pool, item_id)] == ["released"]
    again = await store.claim("w2", ALL_KINDS, lease_seconds=LEASE)
    assert again is not None and again.attempt == 2


async def test_recovery_requeues_in_place_counts_stalls_and_fails_the_last(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock, max_stalls=3)
    c = await add_config(pool, clock)
    item_id = await store.enqueue("crawl", config_id=c)
    await clock.advance(1)
    later = await store.enqueue("burst_detection", config_id=c)
    requested = (await store.get(item_id)).requested_at  # type: ignore[union-attr]
    for attempt in (1, 2):
        claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
        assert claimed is not None and (claimed.id, claimed.attempt) == (item_id, attempt)
        await clock.advance(LEASE)
        # Not yet: the lease expires strictly after LEASE seconds.
        assert await store.recover_expired_leases() == RecoveryReport()
        await clock.advance(0.001)
        assert await store.recover_expired_leases() == RecoveryReport(requeued=1)
        item = await store.get(item_id)
        assert item is not None
        assert (item.status, item.stalls, item.requested_at) == (Status.QUEUED, attempt, requested)
        # The stale attempt's writes change nothing.
        assert await store.complete(item_id, attempt) is False
        assert await store.heartbeat(item_id, attempt, LEASE) is Beat.LOST
    claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.attempt == 3
    await clock.advance(LEASE + 1)
    assert await store.recover_expired_leases() == RecoveryReport(failed=1)
    item = await store.get(item_id)
    assert item is not None and item.status is Status.FAILED and item.stalls == 3
    assert item.error == "stalled: the lease expired 3 times"
    rows = await _attempt_rows(pool, item_id)
    assert [r[2] for r in rows] == ["stalled", "stalled", "stalled"]
    assert rows[-1][4] == clock.now()  # ended when recovery took it back
    # The config is free again for its next item.
    nxt = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert nxt is not None and nxt.id == later


async def test_retry_requeues_in_place_counts_stalls_and_fails_the_last(
    pool: AsyncConnectionPool[Any],
) -> None:
    """An attempt interrupted by a database error goes back in its place at once,
    counting a stall like lease recovery, and fails once it reaches max_stalls."""
    clock = FakeClock()
    store = make_store(pool, clock, max_stalls=2)
    c = await add_config(pool, clock)
    item_id = await store.enqueue("crawl", config_id=c)
    await clock.advance(1)
    later = await store.enqueue("burst_detection", config_id=c)
    requested = (await store.get(item_id)).requested_at  # type: ignore[union-attr]

    claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id
    assert await store.retry(item_id, 2, "OperationalError: gone") is False  # fenced
    assert await store.retry(item_id, 1, "OperationalError: gone") is True
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.stalls, item.requested_at, item.error) == (
        Status.QUEUED,
        1,
        requested,
        "OperationalError: gone",
    )
    assert item.lease_expires_at is None and item.worker_id is None
    assert await store.retry(item_id, 1, "again") is False  # no longer running

    claimed = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert claimed is not None and (claimed.id, claimed.attempt) == (item_id, 2)
    assert claimed.error is None  # a new attempt starts clean
    assert await store.retry(item_id, 2, "OperationalError: gone again") is True
    item = await store.get(item_id)
    assert item is not None and item.status is Status.FAILED and item.stalls == 2
    assert item.error == "interrupted 2 times; last: OperationalError: gone again"
    assert item.finished_at == clock.now()
    rows = await _attempt_rows(pool, item_id)
    assert [r[2] for r in rows] == ["stalled", "stalled"]
    nxt = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert nxt is not None and nxt.id == later


@pytest.mark.parametrize("taken_back_by", ["lease recovery", "retry"])
async def test_an_item_taken_back_while_its_dedup_key_is_queued_again_is_superseded(
    pool: AsyncConnectionPool[Any], taken_back_by: str
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    old = await store.enqueue("token_cleanup", dedup_key="daily")
    assert (await store.claim("w", ALL_KINDS, lease_seconds=LEASE)) is not None
    new = await store.enqueue("token_cleanup", dedup_key="daily")
    assert new != old
    if taken_back_by == "retry":
        assert await store.retry(old, 1, "OperationalError: gone") is True
    else:
        await clock.advance(LEASE + 1)
        assert await store.recover_expired_leases() == RecoveryReport(superseded=1)
    old_item, new_item = await store.get(old), await store.get(new)
    assert old_item is not None and new_item is not None
    assert old_item.status is Status.CANCELLED and old_item.stalls == 1
    assert old_item.error == "superseded: its dedup key already had a queued item"
    assert new_item.status is Status.QUEUED
    assert [r[2] for r in await _attempt_rows(pool, old)] == ["superseded"]


async def test_cancel_of_queued_running_finished_and_missing_items(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    running = await store.enqueue("noop")
    await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    queued = await store.enqueue("noop")

    assert await store.request_cancel(queued) is CancelResult.CANCELLED
    item = await store.get(queued)
    assert item is not None and item.status is Status.CANCELLED and item.finished_at is not None

    assert await store.request_cancel(running) is CancelResult.REQUESTED
    assert (await store.get(running)).status is Status.RUNNING  # type: ignore[union-attr]
    assert await store.heartbeat(running, 1, LEASE) is Beat.CANCEL_REQUESTED
    assert await store.cancel(running, 1)
    item = await store.get(running)
    assert item is not None and item.status is Status.CANCELLED
    assert [r[2] for r in await _attempt_rows(pool, running)] == ["cancelled"]

    assert await store.request_cancel(running) is CancelResult.FINISHED
    assert await store.request_cancel(10**9) is CancelResult.NOT_FOUND


async def test_retention_deletes_only_old_finished_items(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    old = await store.enqueue("noop")
    await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    await store.complete(old, 1)
    await clock.advance(10 * 86400)
    recent = await store.enqueue("noop")
    await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    await store.complete(recent, 1)
    queued = await store.enqueue("noop")
    assert await store.delete_finished(timedelta(days=7), batch=1) == 1
    assert await store.get(old) is None
    assert await store.get(recent) is not None and await store.get(queued) is not None
    assert await count(pool, "SELECT count(*) FROM work_attempts WHERE work_item_id = %s", old) == 0


async def test_fenced_transaction_holds_recovery_off_and_refuses_a_lost_attempt(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    async with store.fenced(item_id, 1) as conn:
        await conn.execute("SELECT 1")
    # Once recovery has taken the item back, the old attempt's fenced write is refused.
    await clock.advance(LEASE + 1)
    # The lease has expired but the item is not recovered yet: still refused, since
    # the lease no longer holds.
    with pytest.raises(AttemptLost):
        async with store.fenced(item_id, 1):
            pass
    assert (await store.recover_expired_leases()).requeued == 1
    with pytest.raises(AttemptLost):
        async with store.fenced(item_id, 1):
            pass

    # While a fenced transaction is open, recovery cannot take the item back: it skips
    # the locked row (SKIP LOCKED) and takes it at its next round.
    await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    async with store.fenced(item_id, 2) as conn:
        await clock.advance(LEASE + 1)
        assert await store.recover_expired_leases() == RecoveryReport()
        await conn.execute("SELECT 1")
    assert (await store.recover_expired_leases()).requeued == 1


async def test_a_fenced_transaction_left_open_by_a_cut_off_worker_does_not_block_recovery(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """A Worker cut off inside a fenced transaction keeps its row lock, and recovery
    skips locked rows; the server ends such a session after the configured idle time."""
    clock = FakeClock()
    store = make_store(pool, clock)
    item_id = await store.enqueue("noop")
    zombie_pool = await open_pool(database_url, max_size=1, idle_in_transaction_seconds=0.2)
    try:
        zombie = make_store(zombie_pool, clock)
        assert await zombie.claim("zombie", ALL_KINDS, lease_seconds=LEASE) is not None
        fenced = zombie.fenced(item_id, 1)
        await fenced.__aenter__()  # ... and then the network goes quiet
        await clock.advance(LEASE + 1)
        report = RecoveryReport()
        for _ in range(1000):  # the server's own timer ends the session; poll for it
            report = await store.recover_expired_leases()
            if report.requeued:
                break
            await asyncio.sleep(0.01)
        assert report == RecoveryReport(requeued=1)
        with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
            await fenced.__aexit__(None, None, None)
    finally:
        await zombie_pool.close()
