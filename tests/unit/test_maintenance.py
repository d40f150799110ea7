"""Maintenance services with a scripted store: recovery, the scheduler, and their loop."""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

import psycopg
import pytest

from safelight.handlers import CRAWL
from safelight.testing.fakeclock import FakeClock
from safelight.testing.workstore import ScriptedStore, as_work_store
from safelight.work.maintenance import (
    LeaseRecovery,
    PerConfig,
    Periodic,
    Scheduler,
    ScheduleSettings,
    every,
)
from safelight.work.model import RecoveryReport

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

C1 = UUID("00000000-0000-0000-0000-0000000000c1")
C2 = UUID("00000000-0000-0000-0000-0000000000c2")


SETTINGS = ScheduleSettings(
    periodic=(Periodic("token_cleanup", 86400.0), Periodic("proxy_sweep", 3600.0)),
    per_config=(PerConfig("crawl", 14400.0, CRAWL.dedup_key),),
)


async def test_scheduler_enqueues_what_is_due_and_a_crawl_per_config() -> None:
    store = ScriptedStore(
        kinds={"token_cleanup", "proxy_sweep", "crawl"},
        configs=[C1, C2],
        due={"proxy_sweep", f"crawl:{C2}"},
    )
    enqueued = await Scheduler(as_work_store(store), SETTINGS, owner="bob").run_once()
    assert store.calls == [
        ("schedule", "token_cleanup", "token_cleanup", 86400.0, None),
        ("schedule", "proxy_sweep", "proxy_sweep", 3600.0, None),
        ("configs", "bob"),
        ("schedule", f"crawl:{C1}", "crawl", 14400.0, C1),
        ("schedule", f"crawl:{C2}", "crawl", 14400.0, C2),
    ]
    assert enqueued == [2, 5]


async def test_scheduler_skips_kinds_it_has_no_handler_for() -> None:
    store = ScriptedStore(kinds={"proxy_sweep"}, configs=[C1])
    assert await Scheduler(as_work_store(store), SETTINGS).run_once() == []
    assert store.calls == [("schedule", "proxy_sweep", "proxy_sweep", 3600.0, None)]


def test_schedule_settings_defaults() -> None:
    # The intervals are the settings' (tests/unit/test_kinds.py checks the defaults the
    # kinds table hands the scheduler); the engine schedules nothing of its own.
    assert ScheduleSettings() == ScheduleSettings(periodic=(), per_config=())


async def test_lease_recovery_reports_and_logs_only_when_it_took_something(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = ScriptedStore()
    recovery = LeaseRecovery(as_work_store(store))
    with caplog.at_level(logging.INFO, logger="safelight.work.maintenance"):
        assert await recovery.run_once() == RecoveryReport()
        assert caplog.records == []
        store.report = RecoveryReport(requeued=2, failed=1, superseded=3)
        assert await recovery.run_once() == store.report
    assert [r.getMessage() for r in caplog.records] == [
        "lease recovery: 2 requeued, 1 failed as stalled, 3 superseded"
    ]


async def test_every_runs_at_once_then_each_interval_and_survives_outages(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[float] = []
    failures: list[BaseException | None] = [
        psycopg.OperationalError("server closed the connection\ndetail"),
        TimeoutError(),
        None,
    ]

    async def action() -> None:
        runs.append(clock.monotonic() - 1000.0)
        failure = failures.pop(0) if failures else None
        if failure is not None:
            raise failure

    with caplog.at_level(logging.WARNING, logger="safelight.work.maintenance"):
        loop = asyncio.create_task(
            every(clock, 15.0, "lease recovery", action, backoff_max_seconds=60.0)
        )
        await clock.settle()
        assert runs == [0.0]
        await clock.advance(14.999)
        assert runs == [0.0]
        await clock.advance(0.001)
        assert runs == [0.0, 15.0]
        await clock.advance(29.999)
        assert runs == [0.0, 15.0]  # after a second failure in a row, twice the period
        await clock.advance(0.001)
        await clock.advance(15)  # a success brings the period back
        assert runs == [0.0, 15.0, 45.0, 60.0]
    assert [r.getMessage() for r in caplog.records] == [
        "lease recovery failed (OperationalError: server closed the connection); retrying in 15 s",
        "lease recovery failed (TimeoutError); retrying in 30 s",
    ]
    loop.cancel()
    await asyncio.gather(loop, return_exceptions=True)


async def test_every_backs_off_up_to_its_ceiling_and_retries_any_database_error(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    runs: list[float] = []
    # A database's answer (a foreign-key violation: a config deleted between two
    # statements) is retried like an outage; it may not come again.
    failures: list[BaseException] = [
        psycopg.errors.ForeignKeyViolation("gone"),
        *[OSError("unreachable")] * 4,
    ]

    async def action() -> None:
        runs.append(clock.monotonic() - 1000.0)
        if failures:
            raise failures.pop(0)

    with caplog.at_level(logging.WARNING, logger="safelight.work.maintenance"):
        loop = asyncio.create_task(every(clock, 15.0, "scheduler", action, backoff_max_seconds=50))
        await clock.advance(15 + 30 + 50 + 50 + 50 + 15)
    # 15, 30, then the ceiling; the period again after the success.
    assert runs == [0.0, 15.0, 45.0, 95.0, 145.0, 195.0, 210.0]
    assert [r.getMessage().rsplit(" ", 2)[-2] for r in caplog.records] == [
        "15",
        "30",
        "50",
        "50",
        "50",
    ]
    loop.cancel()
    await asyncio.gather(loop, return_exceptions=True)


async def test_every_lets_a_bug_through(clock: FakeClock) -> None:
    async def action() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        await every(clock, 1.0, "x", action, backoff_max_seconds=60.0)
