"""The supervisor on a FakeClock, with real Workers on a scripted store and executor: how
the run ends (idle, signals, a Worker's error, a background task's failure) and that
nothing is left running after it."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from safelight.testing.executor import FakeExecutor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import noop_item as item
from safelight.testing.workers import noop_worker as worker
from safelight.testing.workstore import ScriptedStore
from safelight.work.model import WorkItem
from safelight.work.supervisor import Background, BackgroundFailed, Stopped, supervise
from safelight.work.worker import Worker

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

LOGGER = "test.supervisor"


class Service:
    """A background service that waits until cancelled, recording that it was."""

    def __init__(self, name: str, ended: list[str]) -> None:
        self.name = name
        self.ended = ended

    async def run(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.ended.append(self.name)
            raise

    @property
    def background(self) -> Background:
        return Background(self.name, self.run)


def run(
    workers: list[Worker], background: list[Background], shutdown: asyncio.Event
) -> Coroutine[Any, Any, Stopped]:
    return supervise(
        workers,
        background,
        shutdown=shutdown,
        log=logging.getLogger(LOGGER),
        install_signal_handlers=False,
    )


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]


@pytest.fixture
async def signals(monkeypatch: pytest.MonkeyPatch) -> dict[int, Callable[[], object]]:
    """The signal handlers the supervisor installs, to call as the kernel would; a
    handler it removes leaves the dict."""
    loop = asyncio.get_running_loop()
    installed: dict[int, Callable[[], object]] = {}

    def add(signum: int, callback: Callable[..., object], *args: object) -> None:
        installed[signum] = lambda: callback(*args)

    def remove(signum: int) -> bool:
        return installed.pop(signum, None) is not None

    monkeypatch.setattr(loop, "add_signal_handler", add)
    monkeypatch.setattr(loop, "remove_signal_handler", remove)
    return installed


async def assert_nothing_left(clock: FakeClock) -> None:
    await clock.settle()
    assert asyncio.all_tasks() == {asyncio.current_task()}


# --- a background task that ends -------------------------------------------------------


async def test_a_failed_background_task_is_logged_stops_the_workers_and_fails_the_run(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    busy, idle = FakeExecutor(until_shutdown=True), FakeExecutor(until_shutdown=True)
    ended: list[str] = []

    async def recovery() -> None:
        await busy.started.wait()  # fails while an item runs
        raise ZeroDivisionError("a bug\nand more")

    shutdown = asyncio.Event()
    with pytest.raises(BackgroundFailed) as raised:
        await run(
            [
                worker(clock, ScriptedStore(claims=[item(1)]), busy, "w1"),
                worker(clock, ScriptedStore(), idle, "w2"),
            ],
            [Service("listener", ended).background, Background("lease-recovery", recovery)],
            shutdown,
        )
    assert str(raised.value) == "the lease-recovery task stopped: ZeroDivisionError: a bug"
    assert raised.value.name == "lease-recovery"
    assert isinstance(raised.value.__cause__, ZeroDivisionError)
    # The Workers stopped as on a first signal: the running item was released.
    assert shutdown.is_set() and busy.released == [1] and idle.released == []
    assert ended == ["listener"]
    assert logged(caplog) == [
        ("ERROR", "background task lease-recovery failed; stopping the Workers")
    ]
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is not None and record.exc_info[1] is raised.value.__cause__
    await assert_nothing_left(clock)


async def test_a_background_task_that_returns_fails_the_run_too(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    async def scheduler() -> None:
        return None

    shutdown = asyncio.Event()
    with pytest.raises(BackgroundFailed, match=r"^the scheduler task stopped: it returned$"):
        await run(
            [worker(clock, ScriptedStore(), FakeExecutor(until_shutdown=True), "w1")],
            [Background("scheduler", scheduler)],
            shutdown,
        )
    assert shutdown.is_set()
    assert logged(caplog) == [("ERROR", "background task scheduler returned; stopping the Workers")]
    await assert_nothing_left(clock)


async def test_the_first_failure_is_the_one_raised(clock: FakeClock) -> None:
    async def first() -> None:
        raise KeyError("first")

    async def second() -> None:
        await asyncio.sleep(0)
        raise KeyError("second")

    with pytest.raises(BackgroundFailed, match=r"^the one task stopped: KeyError: 'first'$"):
        await run(
            [worker(clock, ScriptedStore(), FakeExecutor(until_shutdown=True), "w1")],
            [Background("one", first), Background("two", second)],
            asyncio.Event(),
        )
    await assert_nothing_left(clock)


# --- a background task's fatal error: the end of the run, no bug ---------------------------


class Gone(Exception):
    """What a watch of the database raises when it stopped for good."""


def watch(gone: asyncio.Event, error: Exception) -> Background:
    async def run() -> None:
        await gone.wait()
        raise error

    return Background("embedded-server", run, fatal=(Gone,))


async def test_a_fatal_error_cancels_the_workers_at_once_and_is_raised_as_it_is(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    # One item that would never be released (its database is gone), one idle Worker.
    stuck = FakeExecutor(ignore_shutdown=True)
    ended: list[str] = []
    gone = asyncio.Event()
    error = Gone("the database stopped\nand more")
    shutdown = asyncio.Event()
    task = asyncio.create_task(
        run(
            [
                worker(clock, ScriptedStore(), FakeExecutor(until_shutdown=True), "w1"),
                worker(clock, ScriptedStore(claims=[item(5)]), stuck, "w2"),
            ],
            [Service("listener", ended).background, watch(gone, error)],
            shutdown,
        )
    )
    await stuck.started.wait()
    gone.set()
    with pytest.raises(Gone) as raised:
        await task
    assert raised.value is error
    assert shutdown.is_set() and stuck.released == [] and ended == ["listener"]
    # One line, no traceback: it is no bug.
    assert logged(caplog) == [("ERROR", "Gone: the database stopped; stopping the Workers at once")]
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is None
    await assert_nothing_left(clock)


async def test_a_fatal_error_goes_before_a_workers_error(clock: FakeClock) -> None:
    stuck = FakeExecutor(ignore_shutdown=True)
    gone = asyncio.Event()
    task = asyncio.create_task(
        run(
            [
                worker(clock, ScriptedStore(claims=[item(5)]), stuck, "w1"),
                worker(
                    clock,
                    ScriptedStore(claims=[RuntimeError("a bug")]),
                    FakeExecutor(until_shutdown=True),
                    "w2",
                ),
            ],
            [watch(gone, Gone("the database stopped"))],
            asyncio.Event(),
        )
    )
    await stuck.started.wait()
    await clock.settle()
    assert not task.done()  # w2 failed; w1's item ignores the shutdown
    gone.set()
    with pytest.raises(Gone):
        await task
    await assert_nothing_left(clock)


async def test_an_error_the_task_does_not_name_fatal_is_a_bug_as_ever(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    gone = asyncio.Event()
    gone.set()
    with pytest.raises(BackgroundFailed, match=r"^the embedded-server task stopped: KeyError"):
        await run(
            [worker(clock, ScriptedStore(), FakeExecutor(until_shutdown=True), "w1")],
            [watch(gone, KeyError("a bug"))],
            asyncio.Event(),
        )
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is not None
    await assert_nothing_left(clock)


# --- a normal end ------------------------------------------------------------------------


async def test_workers_until_idle_end_the_run_and_the_background_is_cancelled_quietly(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    ended: list[str] = []
    shutdown = asyncio.Event()
    gate = asyncio.Event()
    gate.set()
    executor = FakeExecutor(gate=gate)
    stopped = await run(
        [
            worker(clock, ScriptedStore(claims=[item(1)]), executor, "w1", until_idle=True),
            worker(
                clock,
                ScriptedStore(),
                FakeExecutor(until_shutdown=True),
                "w2",
                until_idle=True,
            ),
        ],
        [Service("listener", ended).background, Service("lease-recovery", ended).background],
        shutdown,
    )
    assert stopped == Stopped(interrupted=False, at_once=False)
    assert executor.finished == [1] and not shutdown.is_set()
    assert sorted(ended) == ["lease-recovery", "listener"]
    assert logged(caplog) == []
    await assert_nothing_left(clock)


async def test_a_task_that_returns_when_cancelled_at_the_end_is_quiet(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    async def listener() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return  # swallows it: it ended as it was asked to

    stopped = await run(
        [
            worker(
                clock,
                ScriptedStore(),
                FakeExecutor(until_shutdown=True),
                "w1",
                until_idle=True,
            )
        ],
        [Background("listener", listener)],
        asyncio.Event(),
    )
    assert stopped == Stopped(interrupted=False, at_once=False)
    assert logged(caplog) == []


async def test_a_shutdown_set_from_outside_ends_the_run(clock: FakeClock) -> None:
    executor = FakeExecutor(until_shutdown=True)
    shutdown = asyncio.Event()
    task = asyncio.create_task(
        run(
            [worker(clock, ScriptedStore(claims=[item(4)]), executor, "w1")],
            [Service("listener", []).background],
            shutdown,
        )
    )
    await executor.started.wait()
    # Each task is named after what it runs (for the log and py-spy).
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert {"listener", "w1"} <= names
    shutdown.set()
    assert await task == Stopped(interrupted=False, at_once=False)
    assert executor.released == [4]


async def test_without_workers_the_run_ends_at_once(clock: FakeClock) -> None:
    stopped = await run([], [Service("listener", []).background], asyncio.Event())
    assert stopped == Stopped(interrupted=False, at_once=False)
    await assert_nothing_left(clock)


# --- a Worker's error ----------------------------------------------------------------------


async def test_a_workers_error_is_logged_at_once_and_stops_its_siblings(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's complaint: a Worker that died of a bug left its siblings running, and
    surfaced only when all had stopped (never, without a signal)."""
    sibling = FakeExecutor(until_shutdown=True)  # runs its item until shutdown, then releases it
    ended: list[str] = []
    bug = KeyError("a bug")
    claimed = asyncio.Event()

    class AfterTheSibling(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            await claimed.wait()
            raise bug

    shutdown = asyncio.Event()
    task = asyncio.create_task(
        run(
            [
                worker(clock, AfterTheSibling(), FakeExecutor(until_shutdown=True), "w1"),
                worker(clock, ScriptedStore(claims=[item(2)]), sibling, "w2"),
            ],
            [Service("listener", ended).background],
            shutdown,
        )
    )
    await sibling.started.wait()
    claimed.set()
    with pytest.raises(KeyError, match="a bug") as raised:
        await task
    assert raised.value is bug
    # The sibling stopped as on a first signal, without the clock moving: its item went
    # back to the queue, and the background task was cancelled.
    assert shutdown.is_set() and sibling.released == [2] and ended == ["listener"]
    assert logged(caplog) == [("ERROR", "worker w1 failed; stopping the Workers")]
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is not None and record.exc_info[1] is bug
    await assert_nothing_left(clock)


async def test_the_first_workers_error_is_the_one_raised(clock: FakeClock) -> None:
    first, second = KeyError("first"), KeyError("second")

    class Failing(ScriptedStore):
        def __init__(self, error: BaseException, turns: int) -> None:
            super().__init__()
            self.error, self.turns = error, turns

        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            for _ in range(self.turns):
                await asyncio.sleep(0)
            raise self.error

    with pytest.raises(KeyError) as raised:
        await run(
            [
                worker(clock, Failing(second, 3), FakeExecutor(until_shutdown=True), "w1"),
                worker(clock, Failing(first, 0), FakeExecutor(until_shutdown=True), "w2"),
            ],
            [],
            asyncio.Event(),
        )
    assert raised.value is first
    await assert_nothing_left(clock)


async def test_a_workers_error_goes_before_a_background_failure(clock: FakeClock) -> None:
    started = asyncio.Event()

    async def recovery() -> None:
        await started.wait()
        raise ZeroDivisionError

    class Failing(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            started.set()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            raise KeyError("a bug")

    with pytest.raises(KeyError, match="a bug"):
        await run(
            [worker(clock, Failing(), FakeExecutor(until_shutdown=True), "w1")],
            [Background("lease-recovery", recovery)],
            asyncio.Event(),
        )
    await assert_nothing_left(clock)


# --- signals -------------------------------------------------------------------------------


async def test_the_first_signal_releases_the_running_items(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, signals: dict[int, Callable[[], object]]
) -> None:
    executor = FakeExecutor(until_shutdown=True)
    ended: list[str] = []
    shutdown = asyncio.Event()
    task = asyncio.create_task(
        supervise(
            [worker(clock, ScriptedStore(claims=[item(3)]), executor, "w1")],
            [Service("listener", ended).background],
            shutdown=shutdown,
            log=logging.getLogger(LOGGER),
        )
    )
    await executor.started.wait()
    assert sorted(signals) == [signal.SIGINT, signal.SIGTERM]
    signals[signal.SIGTERM]()
    assert await task == Stopped(interrupted=True, at_once=False)
    assert executor.released == [3] and ended == ["listener"]
    assert signals == {}  # removed
    assert logged(caplog) == [
        (
            "WARNING",
            "SIGTERM: finishing up; the running items go back to the queue (again to stop now)",
        )
    ]
    await assert_nothing_left(clock)


async def test_a_second_signal_stops_the_workers_at_once(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, signals: dict[int, Callable[[], object]]
) -> None:
    stuck = FakeExecutor(ignore_shutdown=True)
    ended: list[str] = []
    task = asyncio.create_task(
        supervise(
            [
                worker(clock, ScriptedStore(), FakeExecutor(until_shutdown=True), "w1"),
                worker(clock, ScriptedStore(claims=[item(5)]), stuck, "w2"),
            ],
            [Service("listener", ended).background],
            shutdown=asyncio.Event(),
            log=logging.getLogger(LOGGER),
        )
    )
    await stuck.started.wait()
    signals[signal.SIGINT]()
    await clock.settle()
    assert not task.done()  # w2's item ignores the shutdown
    signals[signal.SIGINT]()
    assert await task == Stopped(interrupted=True, at_once=True)
    assert stuck.released == [] and ended == ["listener"] and signals == {}
    assert logged(caplog) == [
        (
            "WARNING",
            "SIGINT: finishing up; the running items go back to the queue (again to stop now)",
        ),
        ("WARNING", "stopping now; lease recovery will requeue the running items"),
    ]
    await assert_nothing_left(clock)
