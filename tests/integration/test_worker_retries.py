"""Retries end to end on real PostgreSQL and a FakeClock (ADR 0024): the real engine's
Worker, executor and store retry a failure that may pass at its due time, woken by its
own timer (no listener runs: no notification comes), until the kind's attempts are
spent; a failure that would repeat fails at once."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import WorkerOptions, build_engine
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock, FakeTimer
from safelight.testing.handlers import database_of
from safelight.work.context import Handler, HandlerContext
from safelight.work.model import Status
from safelight.work.worker import Worker

pytestmark = pytest.mark.integration

EIO = "OSError: [Errno 5] Input/output error"


def engine_worker(
    pool: AsyncConnectionPool[Any], tmp_path: Path, clock: FakeClock, handler: Handler
) -> Worker:
    settings = Settings(
        database_url="postgresql://unused",
        home=tmp_path / "home",
        decode_processes=0,
        # Far beyond the test: only the Worker's wake-up for the next retry can wake it.
        poll_seconds=10_000.0,
        retry_max_attempts=3,
        # Not 30 s: half a lease, when an attempt's self-stop timer is due.
        retry_delay_seconds=40.0,
        retry_jitter=0.0,
    )
    engine = build_engine(
        settings,
        database_of(pool),
        clock,
        WorkerOptions(until_idle=True, name="w"),
        handlers=lambda services: {"noop": handler},
    )
    (worker,) = engine.workers
    return worker


class WatchedClock(FakeClock):
    """A FakeClock that signals each timer armed, for a test waiting for the Worker to
    park on it between database round trips."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = asyncio.Event()

    def call_later(self, seconds: float, callback: Callable[[], object]) -> FakeTimer:
        timer = super().call_later(seconds, callback)
        self.armed.set()
        return timer


async def parked(clock: WatchedClock, *deadlines: float) -> None:
    """Until the only timers pending are ``deadlines`` (seconds since the clock's start):
    the Worker waits on the clock (bounded by a real guard, not a tested deadline)."""

    async def _wait() -> None:
        while clock.deadlines() != [1000.0 + d for d in deadlines]:
            clock.armed.clear()
            await clock.armed.wait()

    await asyncio.wait_for(_wait(), timeout=30)


async def test_a_failure_that_may_pass_is_retried_when_due_until_its_attempts_are_spent(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = WatchedClock()
    tried: list[tuple[int, float]] = []

    async def flaky(ctx: HandlerContext) -> dict[str, Any]:
        tried.append((ctx.item.attempt, clock.monotonic() - 1000.0))
        raise OSError(errno.EIO, "Input/output error")

    worker = engine_worker(pool, tmp_path, clock, flaky)
    store = worker._store
    item_id = await store.enqueue("noop")
    run = asyncio.create_task(worker.run(asyncio.Event()))
    try:
        await parked(clock, 40.0)  # back in 40 s: the first backoff
        item = await store.get(item_id)
        assert item is not None and (item.status, item.retries) == (Status.QUEUED, 1)
        await clock.advance(39.999)
        assert tried == [(1, 0.0)]
        await clock.advance(0.001)
        await parked(clock, 120.0)  # the second failure waits twice as long
        assert tried == [(1, 0.0), (2, 40.0)]
        await clock.advance(80)
        await asyncio.wait_for(run, timeout=30)  # the last attempt failed: idle
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
    assert tried == [(1, 0.0), (2, 40.0), (3, 120.0)]
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.retries, item.stalls, item.not_before) == (
        Status.FAILED,
        2,
        0,
        None,
    )
    assert item.error == f"failed 3 times; last: {EIO}"
    history = await store.attempts(item_id)
    assert [(a["attempt"], a["outcome"]) for a in history] == [
        (1, "failed"),
        (2, "failed"),
        (3, "failed"),
    ]


async def test_a_failure_that_would_repeat_is_not_retried(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = FakeClock()

    async def refused(ctx: HandlerContext) -> dict[str, Any]:
        raise PermissionError(errno.EACCES, "Permission denied")

    worker = engine_worker(pool, tmp_path, clock, refused)
    item_id = await worker._store.enqueue("noop")
    await asyncio.wait_for(worker.run(asyncio.Event()), timeout=30)
    item = await worker._store.get(item_id)
    assert item is not None
    assert (item.status, item.retries, item.attempt) == (Status.FAILED, 0, 1)
    assert item.error == "PermissionError: [Errno 13] Permission denied"
