"""Every background task of a Worker process, as ``build_engine`` wires it, with a failure
injected (docs/operations.md, "Supervision"): the database being away is retried after
the task's backoff on the FakeClock; a bug is logged with its traceback and ends the run
with ``BackgroundFailed``, the Workers stopped at once, their items released.

The Workers' own failures are tests/unit/test_supervisor.py and test_worker_loop.py's;
the real ``run_workers`` is tests/integration/test_run_workers.py's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import Engine, WorkerOptions, build_engine
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.testing.executor import FakeExecutor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import noop_item
from safelight.testing.workers import noop_worker
from safelight.testing.workstore import ScriptedStore
from safelight.work import wakeup
from safelight.work.model import RecoveryReport
from safelight.work.supervisor import Background, BackgroundFailed, supervise

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

URL = "postgresql://nobody@nowhere.invalid/none"
LOGGER = "test.supervision"


@pytest.fixture
async def engine(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Engine]:
    """The real engine on a pool that was never opened, on the FakeClock: poll 3 s,
    recovery every 7 s, backoff up to 20 s."""
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(URL, open=False)
    settings = Settings(
        home=tmp_path / "home",
        decode_processes=0,
        poll_seconds=3.0,
        recovery_interval_seconds=7.0,
        outage_backoff_max_seconds=20.0,
    )
    built = build_engine(settings, Database(url=URL, pool=pool), clock, WorkerOptions())
    yield built
    await built.close()


def task(engine: Engine, name: str) -> Background:
    (found,) = [b for b in engine.background if b.name == name]
    return found


def warnings(caplog: pytest.LogCaptureFixture, logger: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == logger]


@pytest.fixture
def busy() -> FakeExecutor:
    """The executor of the Worker beside the task: it runs its item until shutdown."""
    return FakeExecutor(until_shutdown=True)


async def ends_the_run(
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    background: Background,
    bug: BaseException,
    busy: FakeExecutor,
) -> None:
    """Run ``background`` beside a Worker running an item on ``busy`` (the bug waits for
    ``busy.started``), until the run ends: with BackgroundFailed, the traceback logged,
    the item released."""
    shutdown = asyncio.Event()
    with pytest.raises(BackgroundFailed) as raised:
        await supervise(
            [noop_worker(clock, ScriptedStore(claims=[noop_item(1)]), busy, "w1")],
            [background],
            shutdown=shutdown,
            log=logging.getLogger(LOGGER),
            install_signal_handlers=False,
        )
    assert raised.value.name == background.name and raised.value.__cause__ is bug
    assert busy.released == [1] and shutdown.is_set()
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == f"background task {background.name} failed; stopping the Workers"
    assert record.exc_info is not None and record.exc_info[1] is bug


# --- the wake-up listener -----------------------------------------------------------------


class Connection:
    """A LISTEN connection that never hears anything until it is closed."""

    def __init__(self) -> None:
        self.executed: list[str] = []
        self.closed = False

    async def execute(self, sql: str) -> None:
        self.executed.append(sql)

    async def notifies(self) -> AsyncIterator[object]:
        await asyncio.Event().wait()
        yield object()  # pragma: no cover - never reached

    async def close(self) -> None:
        self.closed = True


async def test_the_listener_reconnects_after_its_backoff(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tries: list[float] = []
    replies: list[Any] = [
        psycopg.OperationalError("refused"),
        OSError("no route"),
        psycopg.OperationalError("refused"),
        Connection(),
    ]

    async def connect(url: str, application_name: str) -> Any:
        tries.append(clock.monotonic() - 1000.0)
        reply = replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    monkeypatch.setattr(wakeup, "connect", connect)
    wake = engine.hub.subscribe()
    listening = asyncio.create_task(task(engine, "listener").run())
    with caplog.at_level(logging.WARNING, logger="safelight.work.wakeup"):
        await clock.advance(3 + 6 + 11.999)
        assert tries == [0.0, 3.0, 9.0] and not engine.listener.connected.is_set()
        await clock.advance(0.001)
    assert tries == [0.0, 3.0, 9.0, 21.0]
    assert engine.listener.connected.is_set() and wake.is_set()
    assert warnings(caplog, "safelight.work.wakeup") == [
        "wake-up listener lost its connection (OperationalError); retrying in 3 s",
        "wake-up listener lost its connection (OSError); retrying in 6 s",
        "wake-up listener lost its connection (OperationalError); retrying in 12 s",
    ]
    listening.cancel()
    await asyncio.gather(listening, return_exceptions=True)
    assert not engine.listener.connected.is_set()


async def test_a_bug_in_the_listener_ends_the_run(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    busy: FakeExecutor,
) -> None:
    bug = AttributeError("a bug in the listener")

    async def connect(url: str, application_name: str) -> Any:
        await busy.started.wait()
        raise bug

    monkeypatch.setattr(wakeup, "connect", connect)
    await ends_the_run(clock, caplog, task(engine, "listener"), bug, busy)


# --- lease recovery and the scheduler -------------------------------------------------------


async def test_lease_recovery_retries_after_its_backoff(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rounds: list[float] = []
    replies: list[Any] = [psycopg.OperationalError("down")] * 3 + [RecoveryReport()] * 2

    async def recover() -> RecoveryReport:
        rounds.append(clock.monotonic() - 1000.0)
        reply = replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply  # type: ignore[no-any-return]

    monkeypatch.setattr(engine.store, "recover_expired_leases", recover)
    running = asyncio.create_task(task(engine, "lease-recovery").run())
    with caplog.at_level(logging.WARNING, logger="safelight.work.maintenance"):
        await clock.advance(7 + 14 + 20 + 7)
    # 7, 14, then the ceiling (20 s); the period again once a round succeeded.
    assert rounds == [0.0, 7.0, 21.0, 41.0, 48.0]
    assert warnings(caplog, "safelight.work.maintenance") == [
        "lease recovery failed (OperationalError: down); retrying in 7 s",
        "lease recovery failed (OperationalError: down); retrying in 14 s",
        "lease recovery failed (OperationalError: down); retrying in 20 s",
    ]
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_bug_in_lease_recovery_ends_the_run(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    busy: FakeExecutor,
) -> None:
    """The issue's complaint: an unexpected exception ended lease recovery for that
    process with no log line."""
    bug = ZeroDivisionError("a bug in recovery")

    async def recover() -> RecoveryReport:
        await busy.started.wait()
        raise bug

    monkeypatch.setattr(engine.store, "recover_expired_leases", recover)
    await ends_the_run(clock, caplog, task(engine, "lease-recovery"), bug, busy)


async def test_the_scheduler_retries_after_its_backoff(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rounds: list[float] = []

    async def schedule_if_due(*args: Any, **kwargs: Any) -> int | None:
        rounds.append(clock.monotonic() - 1000.0)
        if len(rounds) == 1:
            raise psycopg.OperationalError("down")
        return None

    async def no_configs(owner: str | None = None) -> list[Any]:
        return []

    monkeypatch.setattr(engine.store, "schedule_if_due", schedule_if_due)
    monkeypatch.setattr(engine.store, "active_config_ids", no_configs)
    running = asyncio.create_task(task(engine, "scheduler").run())
    with caplog.at_level(logging.WARNING, logger="safelight.work.maintenance"):
        await clock.settle()
        first = len(rounds)
        await clock.advance(30)
    # The first round failed at its first schedule; 30 s later (its tick) every
    # periodic kind is looked at again.
    assert first == 1 and rounds[1:] and set(rounds[1:]) == {30.0}
    assert warnings(caplog, "safelight.work.maintenance") == [
        "scheduler failed (OperationalError: down); retrying in 30 s"
    ]
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_bug_in_the_scheduler_ends_the_run(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    busy: FakeExecutor,
) -> None:
    bug = TypeError("a bug in the scheduler")

    async def schedule_if_due(*args: Any, **kwargs: Any) -> int | None:
        await busy.started.wait()
        raise bug

    monkeypatch.setattr(engine.store, "schedule_if_due", schedule_if_due)
    await ends_the_run(clock, caplog, task(engine, "scheduler"), bug, busy)


# --- the presence ---------------------------------------------------------------------------


class Pool:
    """In place of the presence's pool: each connection raises the next of ``errors``
    (waiting for ``before`` first, if given), then answers."""

    def __init__(
        self, clock: FakeClock, errors: list[BaseException], before: asyncio.Event | None = None
    ) -> None:
        self.clock = clock
        self.errors = errors
        self.before = before
        self.tries: list[float] = []

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.tries.append(self.clock.monotonic() - 1000.0)
        if self.before is not None:
            await self.before.wait()
        if self.errors:
            raise self.errors.pop(0)
        yield Writes()


class Writes:
    async def execute(self, sql: str, params: Any = None) -> None:
        pass


async def test_the_presence_retries_after_its_backoff(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    down = OSError("network is unreachable")
    pool = Pool(clock, [down, down])
    monkeypatch.setattr(engine.presence, "_pool", pool)
    running = asyncio.create_task(task(engine, "presence").run())
    with caplog.at_level(logging.WARNING, logger="safelight.work.maintenance"):
        await clock.advance(7 + 14 + 7)
    assert pool.tries == [0.0, 7.0, 21.0, 28.0]
    assert warnings(caplog, "safelight.work.maintenance") == [
        "presence failed (OSError: network is unreachable); retrying in 7 s",
        "presence failed (OSError: network is unreachable); retrying in 14 s",
    ]
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


async def test_a_bug_in_the_presence_ends_the_run(
    engine: Engine,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    busy: FakeExecutor,
) -> None:
    bug = IndexError("a bug in the presence")
    monkeypatch.setattr(engine.presence, "_pool", Pool(clock, [bug], before=busy.started))
    await ends_the_run(clock, caplog, task(engine, "presence"), bug, busy)
