"""Heavy hours on the fake clock, with a real crawl on the real PostgreSQL and two
Workers (ADR 0060): a crawl is not claimed outside its window and is inside it; one
running when the window ends finishes the file it holds, stops, and goes back to the
queue until the next window starts, counting no failure; there it goes on, the files
done before counted as unchanged."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import HEAVY_KINDS
from safelight.handlers.crawl import attempt
from safelight.library.files import hashing
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import jpeg, make_harness, write
from safelight.work.executor import Executor
from safelight.work.hours import HeavyHours, HeavyWindow
from safelight.work.model import Status
from safelight.work.outcome import Deferred, Succeeded
from safelight.work.worker import Worker

pytestmark = pytest.mark.integration

PHOTOS = 8
HELD = 4
"""The file whose hash is held while the window ends: the crawl finishes it, and
starts no other."""
WINDOW = HeavyWindow(HeavyHours.parse("01:00-07:00", UTC), HEAVY_KINDS)


def at(day: int, hour: int, minute: int = 0, second: int = 0) -> datetime:
    return datetime(2026, 1, day, hour, minute, second, tzinfo=UTC)


async def test_a_crawl_keeps_to_heavy_hours_and_goes_on_at_the_next_window(
    pool: AsyncConnectionPool[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock(start=at(1, 0, 59, 55))
    h = make_harness(pool, tmp_path, clock=clock, max_concurrent_files=1)
    monkeypatch.setattr(attempt, "PROGRESS_EVERY_FILES", 1)
    root = tmp_path / "library"
    for n in range(PHOTOS):
        write(root, f"p{n}.jpg", jpeg(n))
    config = await h.add_config(root)
    item_id = await h.store.enqueue("crawl", config_id=config)

    executor = Executor(
        h.store,
        clock,
        h.handlers,
        dataclasses.replace(h.settings.executor(), heavy=WINDOW),
        logging.getLogger("test.heavy"),
    )
    kinds = frozenset(h.handlers)
    one, two = (
        Worker(
            h.store,
            executor,
            clock,
            dataclasses.replace(h.settings.worker(name, kinds), heavy=WINDOW),
        )
        for name in ("one", "two")
    )

    # 00:59:55, outside the window: neither Worker takes the crawl.
    assert await one.run_once() is None
    assert await two.run_once() is None
    queued = await h.store.get(item_id)
    assert queued is not None and queued.status is Status.QUEUED and queued.attempt == 0

    # 06:59:55, inside: taken; the window ends while the HELD-th file is being hashed.
    clock.jump(6 * 3600)
    loop = asyncio.get_running_loop()
    holding, hold = asyncio.Event(), threading.Event()
    hashed = 0
    real_hash = hashing.hash_descriptor

    def hash_then_hold(fd: int, **kwargs: Any) -> Any:
        nonlocal hashed
        hashed += 1
        if hashed == HELD:
            loop.call_soon_threadsafe(holding.set)
            hold.wait(timeout=60)
        return real_hash(fd, **kwargs)

    monkeypatch.setattr("safelight.handlers.crawl.deciding.hash_descriptor", hash_then_hold)
    run = asyncio.create_task(two.run_once())
    try:
        await asyncio.wait_for(holding.wait(), timeout=60)
        await clock.advance(5)  # 07:00: the window ends
        assert not run.done()  # a wind-down is no cancel: the held file goes on
    finally:
        hold.set()
    result = await asyncio.wait_for(run, timeout=60)
    wait = 18 * 3600.0  # to 01:00 the next day
    assert result is not None and isinstance(result.outcome, Deferred)
    assert result.outcome.delay_seconds == wait and result.applied
    assert not result.outcome.counts_as_failure

    deferred = await h.store.get(item_id)
    assert deferred is not None and deferred.status is Status.QUEUED
    assert (deferred.retries, deferred.stalls, deferred.attempt) == (0, 0, 1)
    assert deferred.not_before == at(2, 1)
    assert deferred.error is not None and "goes on when heavy hours start (01:00)" in deferred.error
    # Every file started was finished and committed, and no other was started.
    assert await h.value("SELECT count(*) FROM assets") == HELD
    assert deferred.progress is not None and deferred.progress["counts"]["ingested"] == HELD
    assert (
        await h.value(
            "SELECT outcome::text FROM work_attempts WHERE work_item_id = %s AND attempt = 1",
            item_id,
        )
        == "released"
    )

    # Outside the window again: not taken, by either Worker.
    assert await one.run_once() is None
    clock.jump(3600)
    assert await two.run_once() is None

    # 01:00 the next day: the crawl goes on, the files done before unchanged.
    clock.jump(wait - 3600)
    finished = await asyncio.wait_for(one.run_once(), timeout=60)
    assert finished is not None and isinstance(finished.outcome, Succeeded)
    assert finished.outcome.result is not None
    counts = finished.outcome.result
    assert (counts["unchanged"], counts["ingested"]) == (HELD, PHOTOS - HELD)
    assert await h.value("SELECT count(*) FROM assets") == PHOTOS
    done = await h.store.get(item_id)
    assert done is not None and done.status is Status.SUCCEEDED and done.retries == 0
