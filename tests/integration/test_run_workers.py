"""run_workers on real PostgreSQL: the engine from build_engine under the supervisor, with
its real listener, lease recovery and scheduler (ADR 0021)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import WorkerOptions, app_store, run_workers
from safelight.core.clock import SystemClock
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.work.executor import Executor, Written
from safelight.work.maintenance import LeaseRecovery
from safelight.work.model import RecoveryReport, Status, WorkItem
from safelight.work.store import WorkStore
from safelight.work.supervisor import BackgroundFailed

pytestmark = pytest.mark.integration

# A real guard for a test that would otherwise hang on a bug; a passing one takes < 1 s.
GUARD_SECONDS = 60


def settings(database_url: str, tmp_path: Path) -> Settings:
    return Settings(database_url=database_url, home=tmp_path / "home", decode_processes=0)


async def test_a_run_until_idle_ends_cleanly_and_its_background_tasks_quietly(
    database_url: str,
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = settings(database_url, tmp_path)
    database = Database(url=database_url, pool=pool)
    item_id = await app_store(database, config, SystemClock()).enqueue("noop")
    caplog.set_level(logging.INFO)
    report = await asyncio.wait_for(
        run_workers(
            config,
            WorkerOptions(concurrency=2, until_idle=True),
            database=database,
            install_signal_handlers=False,
        ),
        GUARD_SECONDS,
    )
    assert (report.exit_code, report.interrupted) == (0, False)
    assert [(f.id, f.outcome) for f in report.finished] == [(item_id, "succeeded")]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_failed_background_task_stops_the_workers_and_fails_the_run(
    database_url: str,
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = settings(database_url, tmp_path)
    database = Database(url=database_url, pool=pool)
    store = app_store(database, config, SystemClock())
    item_id = await store.enqueue("noop", payload={"seconds": 3600})

    claimed = asyncio.Event()
    run = Executor.run_to_write

    async def running(self: Executor, item: WorkItem, *args: Any, **kwargs: Any) -> Written:
        claimed.set()
        return await run(self, item, *args, **kwargs)

    async def broken(self: LeaseRecovery) -> RecoveryReport:
        await claimed.wait()  # a bug that strikes while the Worker has an item
        raise ZeroDivisionError("a bug in recovery")

    monkeypatch.setattr(Executor, "run_to_write", running)
    monkeypatch.setattr(LeaseRecovery, "run_once", broken)
    with pytest.raises(BackgroundFailed) as raised:
        await asyncio.wait_for(
            run_workers(config, WorkerOptions(), database=database, install_signal_handlers=False),
            GUARD_SECONDS,
        )
    assert str(raised.value) == (
        "the lease-recovery task stopped: ZeroDivisionError: a bug in recovery"
    )
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.getMessage() == "background task lease-recovery failed; stopping the Workers"
    assert record.exc_info is not None and isinstance(record.exc_info[1], ZeroDivisionError)
    # Stopped as by a first signal: the item went back to the queue, no stall counted.
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.attempt, item.stalls) == (Status.QUEUED, 1, 0)


async def test_a_worker_that_dies_of_a_bug_stops_its_siblings_and_fails_the_run(
    database_url: str,
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The issue's complaint: a Worker that died of a non-transient error left its
    siblings running, and surfaced only when all had stopped."""
    config = Settings(
        database_url=database_url,
        home=tmp_path / "home",
        decode_processes=0,
        poll_seconds=0.05,
    )
    database = Database(url=database_url, pool=pool)
    store = app_store(database, config, SystemClock())
    item_id = await store.enqueue("noop", payload={"seconds": 3600})

    holder: list[str] = []
    claim = WorkStore.claim
    bug = KeyError("a bug in the claim")

    async def claiming(self: WorkStore, worker_id: str, *args: Any, **kwargs: Any) -> Any:
        if holder and worker_id != holder[0]:
            raise bug  # the Worker without the item, once its sibling has it
        claimed = await claim(self, worker_id, *args, **kwargs)
        if claimed is not None and claimed.id == item_id:  # not a scheduled item
            holder.append(worker_id)
        return claimed

    monkeypatch.setattr(WorkStore, "claim", claiming)
    with pytest.raises(KeyError) as raised:
        await asyncio.wait_for(
            run_workers(
                config,
                WorkerOptions(concurrency=2, name="w"),
                database=database,
                install_signal_handlers=False,
            ),
            GUARD_SECONDS,
        )
    assert raised.value is bug
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    (failed,) = {"w/0", "w/1"} - set(holder)
    assert record.getMessage() == f"worker {failed} failed; stopping the Workers"
    assert record.exc_info is not None and record.exc_info[1] is bug
    # The sibling stopped as on a first signal, long before its hour: its item went back
    # to the queue, no stall counted.
    item = await store.get(item_id)
    assert item is not None
    assert (item.status, item.attempt, item.stalls) == (Status.QUEUED, 1, 0)
