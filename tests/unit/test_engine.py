"""build_engine: the parts of a Worker process, assembled with nothing started.

Its pool here is one that was never opened (any use of a connection would fail), so
the tests show that building uses none; running the parts is the integration tests'.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import AsyncIterator, Mapping
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import MethodType, SimpleNamespace
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import (
    SCHEDULER_TICK_SECONDS,
    Engine,
    FinishedItem,
    WorkerOptions,
    build_engine,
)
from safelight.appdb import pool_size
from safelight.db.database import Database
from safelight.db.embedded import DATA_FOLDER
from safelight.db.embeddedwatch import EmbeddedServerStopped, watch_postmaster
from safelight.handlers import KIND_SPECS, Services, build_handlers, schedule_settings
from safelight.library.render.decoding import ImageDecoder
from safelight.observe.presence import Presence
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import running_item
from safelight.work.context import Handler, HandlerContext
from safelight.work.executor import RunResult
from safelight.work.maintenance import LeaseRecovery, Scheduler, every
from safelight.work.model import WorkItem
from safelight.work.outcome import Complete, Succeeded
from safelight.work.wakeup import Listener

pytestmark = pytest.mark.usefixtures("loop_errors")

URL = "postgresql://nobody@nowhere.invalid/none"


@pytest.fixture
async def database() -> AsyncIterator[Database]:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(URL, open=False)
    yield Database(url=URL, pool=pool)
    assert pool.closed, "the engine opened its pool"


def settings(tmp_path: Path, **changes: Any) -> Settings:
    # Not the defaults, so that each is seen to come from the settings.
    chosen = {
        "decode_processes": 2,
        "decode_memory_mib": 256,
        "max_stalls": 5,
        "retry_max_attempts": 3,
        "retry_delay_seconds": 2.0,
    }
    return Settings(**{"home": tmp_path / "home", **chosen, **changes})


async def test_building_starts_nothing_and_uses_no_connection(
    database: Database, tmp_path: Path
) -> None:
    tasks, threads = asyncio.all_tasks(), threading.active_count()
    engine = build_engine(
        settings(tmp_path), database, FakeClock(), WorkerOptions(concurrency=3, name="host:1")
    )
    assert asyncio.all_tasks() == tasks
    assert threading.active_count() == threads
    assert engine.decoder is not None and engine.decoder.pids() == []
    assert engine.journal is None
    await engine.close()


async def test_the_parts_share_one_store_executor_clock_and_settings(
    database: Database, tmp_path: Path
) -> None:
    clock = FakeClock()
    config = settings(tmp_path)
    engine = build_engine(
        config, database, clock, WorkerOptions(concurrency=3, user="alice", name="host:1")
    )
    kinds = frozenset(spec.name for spec in KIND_SPECS)
    assert (engine.settings, engine.database, engine.clock, engine.name) == (
        config,
        database,
        clock,
        "host:1",
    )
    assert engine.kinds == kinds == frozenset(engine.handlers)
    assert [w.settings for w in engine.workers] == [
        config.worker(f"host:1/{n}", kinds, owner="alice", until_idle=False) for n in range(3)
    ]
    assert all(w._store is engine.store and w._executor is engine.executor for w in engine.workers)
    assert all(w._clock is clock and w._wake is not None for w in engine.workers)
    assert engine.store.pool is database.pool and engine.store._max_stalls == 5
    assert engine.executor._settings == config.executor()
    assert engine.executor._store is engine.store and engine.executor._clock is clock
    services = engine.services
    assert (services.pool, services.store, services.clock, services.settings) == (
        database.pool,
        engine.store,
        clock,
        config,
    )
    assert services.decoder is engine.decoder
    assert engine.decoder is not None
    assert (engine.decoder.processes, engine.decoder.memory_mib) == (2, config.decode_memory_mib)
    assert [b.name for b in engine.background] == [
        "listener",
        "lease-recovery",
        "presence",
        "scheduler",
    ]
    # One observer counts for all: the store's lost claims, the executor's heartbeats
    # and self-stops, each Worker's items, the crawls' files.
    metrics = engine.metrics
    assert engine.store._observer is metrics and engine.executor._observer is metrics
    assert all(w._observer is metrics for w in engine.workers)
    assert services.crawl_observer is metrics
    assert engine.presence._worker_ids == ["host:1/0", "host:1/1", "host:1/2"]
    assert engine.presence._pool is database.pool and engine.presence._clock is clock
    await engine.close()


async def test_the_wiring_of_the_executor_and_the_workers(
    database: Database, tmp_path: Path
) -> None:
    clock = FakeClock()

    def on_progress(item: WorkItem, counters: Mapping[str, Any]) -> None:
        pass

    engine = build_engine(
        settings(tmp_path), database, clock, WorkerOptions(concurrency=2), on_progress=on_progress
    )
    executor = engine.executor
    assert executor._handlers is engine.handlers and executor._on_progress is on_progress
    assert executor._logger.name == "safelight.executor"
    assert engine.store._clock is clock
    # Every kind is retried by its own policy or, declaring none, by the settings'.
    chosen = settings(tmp_path).retry_policy()
    assert executor._retries.policies == {spec.name: chosen for spec in KIND_SPECS}
    draws = {executor._retries.draw() for _ in range(20)}
    assert len(draws) > 1 and all(0 <= d < 1 for d in draws)
    for worker in engine.workers:
        # Each Worker wakes on the hub, and wakes its siblings when an item ends.
        assert worker._wake is not None and worker._after_item == engine.hub.wake_all
        # One lifecycle log for the process (ADR 0032): its summary counts every Worker.
        assert worker._lifecycle is engine.lifecycle
    assert engine.lifecycle._logger.name == "safelight.work.worker"
    assert engine.lifecycle._clock is clock
    await engine.close()


async def test_the_background_tasks_run_on_the_engines_parts(
    database: Database, tmp_path: Path
) -> None:
    clock = FakeClock()
    engine = build_engine(
        settings(
            tmp_path, recovery_interval_seconds=7.0, poll_seconds=3.0, outage_backoff_max_seconds=45
        ),
        database,
        clock,
        WorkerOptions(user="alice"),
    )
    listener, recovery, presence, scheduler = (b.run for b in engine.background)
    assert isinstance(listener, MethodType) and isinstance(listener.__self__, Listener)
    assert listener.__func__ is Listener.run
    assert (listener.__self__._url, listener.__self__._hub, listener.__self__._clock) == (
        URL,
        engine.hub,
        clock,
    )
    assert listener.__self__ is engine.listener
    backoff = listener.__self__._backoff
    assert (backoff.first_seconds, backoff.most_seconds) == (3.0, 45.0)
    assert all(w.settings.backoff_max_seconds == 45.0 for w in engine.workers)
    assert isinstance(recovery, partial) and recovery.func is every
    assert recovery.keywords == {"backoff_max_seconds": 45.0}
    (on, seconds, name, action) = recovery.args
    assert (on, seconds, name) == (clock, 7.0, "lease recovery")
    assert action.__func__ is LeaseRecovery.run_once and action.__self__._store is engine.store
    assert action.__self__._observer is engine.metrics
    assert isinstance(presence, partial) and presence.func is every
    assert presence.keywords == {"backoff_max_seconds": 45.0}
    (on, seconds, name, action) = presence.args
    assert (on, seconds, name) == (clock, 7.0, "presence")
    assert action.__func__ is Presence.run_once and action.__self__ is engine.presence
    assert engine.presence._forget_after == timedelta(days=engine.settings.work_retention_days)
    assert isinstance(scheduler, partial) and scheduler.func is every
    assert scheduler.keywords == {"backoff_max_seconds": 45.0}
    (on, seconds, name, action) = scheduler.args
    assert (on, seconds, name) == (clock, SCHEDULER_TICK_SECONDS, "scheduler")
    assert action.__func__ is Scheduler.run_once
    assert action.__self__._store is engine.store and action.__self__._owner == "alice"
    assert action.__self__._settings == schedule_settings(engine.settings)
    await engine.close()


async def test_until_idle_there_is_no_scheduler_and_one_worker_keeps_the_name(
    database: Database, tmp_path: Path
) -> None:
    engine = build_engine(
        settings(tmp_path, decode_processes=0),
        database,
        FakeClock(),
        WorkerOptions(until_idle=True),
    )
    assert [b.name for b in engine.background] == ["listener", "lease-recovery", "presence"]
    assert engine.name == f"{socket.gethostname()}:{os.getpid()}"
    (only,) = [w.settings for w in engine.workers]
    assert (only.worker_id, only.owner, only.until_idle) == (engine.name, None, True)
    assert engine.decoder is None and engine.services.decoder is None
    await engine.close()


async def test_on_the_embedded_server_the_engine_watches_its_postmaster_fatally(
    database: Database, tmp_path: Path
) -> None:
    """Nothing brings the embedded server back while the process holds it: its end is
    the end of the run (db.embeddedwatch, ADR 0038), not an outage to wait out."""
    pgdata = tmp_path / "home" / DATA_FOLDER
    database.embedded_handle = SimpleNamespace(pgdata=pgdata)
    engine = build_engine(
        settings(tmp_path, decode_processes=0), database, FakeClock(), WorkerOptions()
    )
    names = [b.name for b in engine.background]
    assert names == ["listener", "lease-recovery", "presence", "embedded-server", "scheduler"]
    watch = engine.background[3]
    assert isinstance(watch.run, partial) and watch.run.func is watch_postmaster
    assert watch.run.args == (pgdata,) and watch.run.keywords == {}
    assert watch.fatal == (EmbeddedServerStopped,)
    assert all(b.fatal == () for b in engine.background if b is not watch)
    await engine.close()


@pytest.mark.parametrize("until_idle", [True, False], ids=["until idle", "for months"])
async def test_each_finished_attempt_is_reported_and_kept_only_by_a_run_until_idle(
    database: Database, tmp_path: Path, until_idle: bool
) -> None:
    seen: list[FinishedItem] = []
    engine = build_engine(
        settings(tmp_path, decode_processes=0),
        database,
        FakeClock(),
        WorkerOptions(until_idle=until_idle),
        on_finished=seen.append,
    )
    item = running_item(id=7, attempt=1, config=None, kind="noop")
    # What a Worker calls once an item has ended.
    engine.workers[0]._on_finished(item, RunResult(Succeeded({"n": 1}), Complete({"n": 1}), True))  # type: ignore[misc]
    assert [(f.id, f.kind, f.outcome, f.result) for f in seen] == [
        (7, "noop", "succeeded", {"n": 1})
    ]
    assert engine.finished == (seen if until_idle else [])


async def test_the_handlers_are_made_from_the_engines_services(
    database: Database, tmp_path: Path
) -> None:
    made: list[Services] = []

    def handlers(services: Services) -> Mapping[str, Handler]:
        made.append(services)
        return {"noop": build_handlers(services)["noop"]}

    engine = build_engine(
        settings(tmp_path, decode_processes=0),
        database,
        FakeClock(),
        WorkerOptions(),
        handlers=handlers,
    )
    assert made == [engine.services]
    assert engine.kinds == {"noop"} and engine.workers[0].settings.kinds == {"noop"}


async def test_a_decoder_of_the_callers_is_used_and_left_running(
    database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shut: list[ImageDecoder] = []
    monkeypatch.setattr(ImageDecoder, "shutdown", lambda self: shut.append(self))
    theirs = ImageDecoder(1)
    engine = build_engine(
        settings(tmp_path), database, FakeClock(), WorkerOptions(), decoder=theirs
    )
    assert engine.decoder is theirs and engine.services.decoder is theirs
    await engine.close()
    assert shut == []
    own = build_engine(settings(tmp_path), database, FakeClock(), WorkerOptions())
    await own.close()
    assert shut == [own.decoder]


async def test_the_side_effect_journal_is_opened_when_set_and_closed_with_the_engine(
    database: Database, tmp_path: Path
) -> None:
    async def noop(ctx: HandlerContext) -> dict[str, Any] | None:
        return None

    def build(config: Settings) -> Engine:
        return build_engine(
            config, database, FakeClock(), WorkerOptions(), handlers=lambda _: {"noop": noop}
        )

    plain = build(settings(tmp_path, decode_processes=0))
    assert plain.journal is None and plain.handlers["noop"] is noop
    log = tmp_path / "effects" / "journal.jsonl"
    engine = build(settings(tmp_path, decode_processes=0, side_effect_log=log))
    assert engine.journal is not None and log.exists() and engine.journal._clock is engine.clock
    assert engine.handlers["noop"] is not noop  # it runs with its attempt as the journal's
    await engine.close()
    with pytest.raises(OSError):
        engine.journal.write({"after": "close"})


@pytest.mark.parametrize(("concurrency", "files"), [(1, 1), (3, 4), (10, 2)])
def test_the_pool_has_a_connection_for_every_use_one_process_makes_at_once(
    concurrency: int, files: int
) -> None:
    # Each Worker adds a connection per file its handler works on at once and three of
    # its own (claims and heartbeats, the crawl's walk); the process adds two for its
    # maintenance. One short would make a heartbeat wait behind a handler's writes.
    settings = Settings(max_concurrent_files=files)
    assert pool_size(settings, concurrency) == concurrency * (3 + files) + 2
    more_files = Settings(max_concurrent_files=files + 1)
    assert pool_size(more_files, concurrency) - pool_size(settings, concurrency) == concurrency
