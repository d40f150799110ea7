"""The executor, on a FakeClock with a scripted store: every store call is asserted
exactly, with the second it was made at, and so is every log line.

The spec's tests (#337): heartbeats failing continuously cancel the handler at half a
lease and not before; one successful heartbeat resets the deadline; a heartbeat call
that never returns still cancels at half a lease; a self-stopped attempt writes
nothing even once the database answers again, and is logged as self-stopped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

import psycopg
import psycopg_pool
import pytest

from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import ITEM
from safelight.testing.workstore import HANG, ScriptedStore, at
from safelight.work.context import HandlerContext
from safelight.work.errors import AttemptLost, AttemptStopped, StopReason, WorkError
from safelight.work.executor import (
    Executor,
    ExecutorSettings,
    RunResult,
    longest_heartbeat,
    shutdown_watch,
)
from safelight.work.model import Beat, WorkItem
from safelight.work.observer import NoObserver
from safelight.work.outcome import (
    Abandoned,
    Cancel,
    Cancelled,
    ClaimedLate,
    Complete,
    Fail,
    Failed,
    Interrupted,
    Lost,
    Release,
    Released,
    Retry,
    SelfStopped,
    Succeeded,
    UnknownKind,
)

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

LOGGER = "test.executor"
DB_DOWN = psycopg.OperationalError("server closed the connection unexpectedly")
DOWN = "OperationalError: server closed the connection unexpectedly"
SELF_STOPPED_30 = (
    "WARNING",
    "work item 7 attempt 3: self-stopped: no successful heartbeat for 30 s "
    "(half the 60 s lease); writing nothing, lease recovery will requeue it",
)


def timing(**changes: Any) -> ExecutorSettings:
    """The default timing (``Settings.executor()``), with ``changes``."""
    return dataclasses.replace(Settings().executor(), **changes)


def failed_beat(n: int) -> tuple[str, str]:
    return ("WARNING", f"work item 7 attempt 3: heartbeat failed ({n} in a row): {DOWN}")


def hb(t: float, lease: float = 60.0) -> tuple[Any, ...]:
    return (t, "heartbeat", 7, 3, lease)


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)


def logs(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """The executor's log lines as (level, message); each must carry the item's ids."""
    records = [r for r in caplog.records if r.name == LOGGER]
    for r in records:
        assert (r.item_id, r.kind, r.attempt) == (7, "crawl", 3), r.getMessage()  # type: ignore[attr-defined]
    return [(r.levelname, r.getMessage()) for r in records]


def log_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


class Probe:
    """A handler that records what happens to it and returns when the test says so.

    ``stop_after`` makes it slow to honour cancellation: it keeps working that many
    seconds on the clock before it lets the cancellation through; ``None`` makes it
    ignore cancellation until ``let_go`` is set (or it is cancelled a third time).
    """

    def __init__(self, clock: FakeClock, stop_after: float | None = 0.0) -> None:
        self.clock = clock
        self.stop_after = stop_after
        self.events: list[tuple[float, str]] = []
        self.go = asyncio.Event()
        self.let_go = asyncio.Event()
        self.result: dict[str, Any] | None = {"files": 3}
        self.contexts: list[HandlerContext] = []

    @property
    def ctx(self) -> HandlerContext:
        return self.contexts[0]

    async def __call__(self, ctx: HandlerContext) -> dict[str, Any] | None:
        self.contexts.append(ctx)
        self.events.append((at(self.clock), "started"))
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            self.events.append((at(self.clock), "cancelled"))
            if self.stop_after is None:
                while not self.let_go.is_set():
                    try:
                        await self.let_go.wait()
                    except asyncio.CancelledError:
                        self.events.append((at(self.clock), "cancelled again"))
                        if len(self.events) > 3:
                            raise  # a third cancellation: only a failed test's clean-up
            elif self.stop_after:
                await self.clock.sleep(self.stop_after)
                self.events.append((at(self.clock), "stopped"))
            raise
        self.events.append((at(self.clock), "finished"))
        return self.result


def make(
    store: ScriptedStore,
    clock: FakeClock,
    handler: Any,
    settings: ExecutorSettings | None = None,
    on_progress: Any = None,
) -> Executor:
    return Executor(
        store,
        clock,
        {"crawl": handler},
        settings or timing(),
        logging.getLogger(LOGGER),
        on_progress,
    )


async def start(
    executor: Executor, item: WorkItem = ITEM, shutdown: asyncio.Event | None = None
) -> asyncio.Task[RunResult]:
    task = asyncio.create_task(executor.run(item, shutdown))
    await asyncio.sleep(0)
    return task


def finished(task: asyncio.Task[RunResult]) -> RunResult:
    assert task.done(), "run() has not returned"
    return task.result()


async def assert_quiet(clock: FakeClock) -> None:
    """Nothing of the attempt is left: no timer, and (after the loop settles) no task."""
    assert clock.deadlines() == []
    await clock.settle()
    assert asyncio.all_tasks() == {asyncio.current_task()}


# --- settings --------------------------------------------------------------------------


def test_the_default_settings() -> None:
    settings = Settings().executor()
    assert (settings.lease_seconds, settings.heartbeat_seconds) == (60.0, 10.0)
    assert settings.shutdown_grace_seconds == 10.0


def test_a_heartbeat_of_exactly_a_quarter_lease_and_no_grace_are_allowed() -> None:
    settings = ExecutorSettings(lease_seconds=40, heartbeat_seconds=10, shutdown_grace_seconds=0)
    assert settings.heartbeat_seconds == 10


def test_the_longest_heartbeat_is_a_quarter_lease() -> None:
    assert (longest_heartbeat(60.0), longest_heartbeat(1.0)) == (15.0, 0.25)


def test_sub_second_timings_are_allowed() -> None:
    settings = timing(lease_seconds=0.8, heartbeat_seconds=0.2)
    assert (settings.lease_seconds, settings.heartbeat_seconds) == (0.8, 0.2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"lease_seconds": 0}, "lease_seconds must be > 0, got 0"),
        ({"lease_seconds": -60}, "lease_seconds must be > 0, got -60"),
        ({"heartbeat_seconds": 0}, "heartbeat_seconds must be > 0, got 0"),
        ({"heartbeat_seconds": -1}, "heartbeat_seconds must be > 0, got -1"),
        (
            {"heartbeat_seconds": 15.001},
            "heartbeat_seconds must be at most lease_seconds / 4 (15), got 15.001",
        ),
        (
            {"lease_seconds": 30, "heartbeat_seconds": 10},
            "heartbeat_seconds must be at most lease_seconds / 4 (7.5), got 10",
        ),
        ({"shutdown_grace_seconds": -0.5}, "shutdown_grace_seconds must be >= 0, got -0.5"),
        (
            {"lease_seconds": math.inf},
            "lease_seconds must be a finite number of seconds, got inf",
        ),
        (
            {"heartbeat_seconds": math.nan},
            "heartbeat_seconds must be a finite number of seconds, got nan",
        ),
        (
            {"shutdown_grace_seconds": math.inf},
            "shutdown_grace_seconds must be a finite number of seconds, got inf",
        ),
    ],
)
def test_settings_are_validated_with_a_message_naming_the_field(
    kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError) as raised:
        timing(**kwargs)
    assert str(raised.value) == message


# --- handler ends on its own -----------------------------------------------------------


async def test_a_handler_that_returns_completes_the_item(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        return {"files": 3}

    task = await start(make(store, clock, handler))
    await clock.settle()
    assert finished(task) == RunResult(Succeeded({"files": 3}), Complete({"files": 3}), True)
    assert store.calls == [(0.0, "complete", 7, 3, {"files": 3})]
    assert logs(caplog) == []
    await assert_quiet(clock)


async def test_heartbeats_renew_the_lease_every_interval_while_the_handler_runs(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.settle()
    # The first beat one interval after the start; the self-stop half a lease after it.
    assert clock.deadlines() == [1010.0, 1030.0]
    await clock.advance(10)
    assert clock.deadlines() == [1020.0, 1040.0]
    await clock.advance(15)
    probe.go.set()
    await clock.settle()
    assert finished(task) == RunResult(Succeeded({"files": 3}), Complete({"files": 3}), True)
    assert store.calls == [hb(10.0), hb(20.0), (25.0, "complete", 7, 3, {"files": 3})]
    assert probe.events == [(0.0, "started"), (25.0, "finished")]
    assert logs(caplog) == []
    await assert_quiet(clock)


async def test_a_handler_that_raises_fails_the_item_with_type_and_message(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    error = ValueError("bad EXIF in IMG_0001.HEIC")

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        await clock.sleep(4)
        raise error

    task = await start(make(store, clock, handler))
    await clock.advance(4)
    text = "ValueError: bad EXIF in IMG_0001.HEIC"
    assert finished(task) == RunResult(Failed(text), Fail(text), True)
    assert store.calls == [(4.0, "fail", 7, 3, text)]
    assert logs(caplog) == [("ERROR", f"work item 7 attempt 3: failed: {text}")]
    exc_info = log_records(caplog)[0].exc_info
    assert exc_info is not None and exc_info[1] is error  # the traceback is logged
    await assert_quiet(clock)


async def test_an_error_raised_on_purpose_fails_the_item_with_one_line_and_no_traceback(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    class Refused(WorkError):
        pass

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        raise Refused('noop: payload field "seconds": expected a number, got "abc"')

    task = await start(make(store, clock, handler))
    await clock.settle()
    text = 'Refused: noop: payload field "seconds": expected a number, got "abc"'
    assert finished(task) == RunResult(Failed(text), Fail(text), True)
    assert logs(caplog) == [("ERROR", f"work item 7 attempt 3: failed: {text}")]
    assert log_records(caplog)[0].exc_info is None
    await assert_quiet(clock)


@pytest.mark.parametrize(
    "error",
    [
        DB_DOWN,
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.errors.DeadlockDetected("deadlock detected"),
        psycopg.InterfaceError("the connection is closed"),
        psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"),
    ],
)
async def test_a_handler_cut_off_from_the_database_is_retried_not_failed(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture, error: Exception
) -> None:
    """A transient database error says nothing about the work: the item goes back to
    the queue (the store counts a stall and fails it at max_stalls), not to failed."""

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        await clock.sleep(2)
        raise error

    task = await start(make(store, clock, handler))
    await clock.advance(2)
    text = f"{type(error).__name__}: {error}"
    assert finished(task) == RunResult(Interrupted(text), Retry(text), True)
    assert store.calls == [(2.0, "retry", 7, 3, text)]
    assert logs(caplog) == [
        (
            "WARNING",
            f"work item 7 attempt 3: interrupted by the database ({text}); "
            "it goes back to the queue, counting a stall",
        )
    ]
    await assert_quiet(clock)


async def test_a_database_error_of_a_stopped_attempt_still_writes_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Self-stopped first, then the handler's database call fails: still no write."""
    store.beat_default = DB_DOWN

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await clock.sleep(100)
        except asyncio.CancelledError:
            raise DB_DOWN from None
        return {}

    task = await start(make(store, clock, handler))
    await clock.advance(30)
    result = finished(task)
    assert (result.outcome, result.write) == (SelfStopped(), None)
    assert [c[1] for c in store.calls] == ["heartbeat", "heartbeat"]


async def test_an_exception_without_a_message_is_written_as_its_type(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        raise RuntimeError

    task = await start(make(store, clock, handler))
    await clock.settle()
    assert finished(task) == RunResult(Failed("RuntimeError"), Fail("RuntimeError"), True)
    assert store.calls == [(0.0, "fail", 7, 3, "RuntimeError")]
    assert logs(caplog) == [("ERROR", "work item 7 attempt 3: failed: RuntimeError")]


async def test_a_handler_that_cancels_itself_fails_the_item(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Nobody stopped the attempt, so this is the handler's own error (and not an
    ``OperationCanceledException`` to be mistaken for a stop)."""

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        raise asyncio.CancelledError

    task = await start(make(store, clock, handler))
    await clock.settle()
    text = "CancelledError: the handler was cancelled while its attempt was not stopped"
    assert finished(task) == RunResult(Failed(text), Fail(text), True)
    assert store.calls == [(0.0, "fail", 7, 3, text)]
    assert logs(caplog) == [("ERROR", f"work item 7 attempt 3: failed: {text}")]
    assert log_records(caplog)[0].exc_info is None


async def test_an_unknown_kind_fails_the_item_without_running_anything(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe(clock)
    purge = dataclasses.replace(ITEM, kind="purge")
    task = await start(make(store, clock, probe), purge)
    await clock.settle()
    assert finished(task) == RunResult(
        UnknownKind("purge"), Fail("no handler for kind purge"), True
    )
    assert store.calls == [(0.0, "fail", 7, 3, "no handler for kind purge")]
    assert probe.events == []
    records = [r for r in caplog.records if r.name == LOGGER]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("ERROR", "work item 7 attempt 3: no handler for kind purge")
    ]
    assert (records[0].item_id, records[0].kind) == (7, "purge")  # type: ignore[attr-defined]
    await assert_quiet(clock)


# --- the self-stop (#337) --------------------------------------------------------------


async def test_heartbeats_failing_continuously_cancel_the_handler_at_half_a_lease_not_before(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(29.999)
    assert probe.events == [(0.0, "started")]
    assert not probe.ctx.cancelled.is_set()
    probe.ctx.ensure_alive()  # still alive: no exception
    await clock.advance(0.001)
    assert probe.events == [(0.0, "started"), (30.0, "cancelled")]
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert store.calls == [hb(10.0), hb(20.0)]
    assert logs(caplog) == [failed_beat(1), failed_beat(2), SELF_STOPPED_30]
    await assert_quiet(clock)


async def test_one_heartbeat_that_succeeds_resets_the_self_stop_clock(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [DB_DOWN, Beat.ALIVE]
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(49.999)
    assert probe.events == [(0.0, "started")]
    await clock.advance(0.001)
    assert probe.events == [(0.0, "started"), (50.0, "cancelled")]
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert store.calls == [hb(10.0), hb(20.0), hb(30.0), hb(40.0)]
    # The count of failures in a row starts over after the success at 20 s.
    assert logs(caplog) == [failed_beat(1), failed_beat(1), failed_beat(2), SELF_STOPPED_30]
    await assert_quiet(clock)


async def test_a_heartbeat_call_that_never_completes_still_cancels_at_half_a_lease(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beat_default = HANG
    probe = Probe(clock, stop_after=5)  # takes 5 s to stop: the grace period is 10 s
    task = await start(make(store, clock, probe))
    await clock.advance(29.999)
    assert probe.events == [(0.0, "started")]
    assert store.calls == [hb(10.0), hb(20.0)]
    assert store.abandoned == [(20.0, "heartbeat")]  # timed out after one interval
    await clock.advance(0.001)
    assert probe.events == [(0.0, "started"), (30.0, "cancelled")]
    # The call in flight is abandoned at once: no more heartbeats after a self-stop.
    assert store.abandoned == [(20.0, "heartbeat"), (30.0, "heartbeat")]
    await clock.advance(4.999)
    assert not task.done()
    await clock.advance(0.001)
    assert probe.events[-1] == (35.0, "stopped")
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert store.calls == [hb(10.0), hb(20.0)]
    assert logs(caplog) == [
        ("WARNING", "work item 7 attempt 3: heartbeat timed out after 10 s (1 in a row)"),
        SELF_STOPPED_30,
    ]
    await assert_quiet(clock)


async def test_a_self_stopped_attempt_writes_nothing_once_the_database_answers_again(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Finding 1: the handler's cancellation surfaces as its own error; with the database
    back it must still not reach fail (which would end the item for good)."""
    store.beats = [DB_DOWN, DB_DOWN]  # then the database answers again: ALIVE, writes apply
    interrupted = RuntimeError("crawl interrupted")

    async def crawl(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise interrupted from None
        return {}

    task = await start(make(store, clock, crawl))
    await clock.advance(30)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    await clock.advance(120)
    assert store.calls == [hb(10.0), hb(20.0)]
    assert logs(caplog) == [
        failed_beat(1),
        failed_beat(2),
        SELF_STOPPED_30,
        (
            "WARNING",
            "work item 7 attempt 3: the handler raised while stopping (self-stopped): "
            "RuntimeError: crawl interrupted",
        ),
    ]
    exc_info = log_records(caplog)[-1].exc_info
    assert exc_info is not None and exc_info[1] is interrupted
    await assert_quiet(clock)


async def test_a_handler_surfacing_attempt_stopped_after_a_self_stop_writes_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beat_default = DB_DOWN
    raised: list[AttemptStopped] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            try:
                ctx.ensure_alive()
            except AttemptStopped as exc:
                raised.append(exc)
                raise
        return {}

    task = await start(make(store, clock, handler))
    await clock.advance(30)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert [exc.reason for exc in raised] == [StopReason.SELF_STOPPED]
    assert str(raised[0]) == "self-stopped"
    assert store.calls == [hb(10.0), hb(20.0)]
    assert logs(caplog) == [failed_beat(1), failed_beat(2), SELF_STOPPED_30]


async def test_a_timed_out_heartbeat_does_not_delay_the_next_one(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [HANG, Beat.ALIVE]
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(19.999)
    assert store.calls == [hb(10.0)]
    await clock.advance(0.001)
    # Timed out at 20 s, exactly when the next beat was due: it went out at once,
    # succeeded, and moved the self-stop to 20 + 30 s.
    assert store.calls == [hb(10.0), hb(20.0)]
    assert store.abandoned == [(20.0, "heartbeat")]
    assert clock.deadlines() == [1030.0, 1050.0]
    assert logs(caplog) == [
        ("WARNING", "work item 7 attempt 3: heartbeat timed out after 10 s (1 in a row)")
    ]
    probe.go.set()
    await clock.settle()
    assert finished(task).outcome == Succeeded({"files": 3})


async def test_heartbeat_misses_are_counted_in_a_row_across_timeouts_and_failures(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [HANG, HANG, DB_DOWN, HANG]
    probe = Probe(clock)
    settings = timing(heartbeat_seconds=5)
    task = await start(make(store, clock, probe, settings))
    await clock.advance(25)
    assert store.calls == [hb(5.0), hb(10.0), hb(15.0), hb(20.0), hb(25.0)]
    assert logs(caplog) == [
        ("WARNING", "work item 7 attempt 3: heartbeat timed out after 5 s (1 in a row)"),
        ("WARNING", "work item 7 attempt 3: heartbeat timed out after 5 s (2 in a row)"),
        failed_beat(3),
        ("WARNING", "work item 7 attempt 3: heartbeat timed out after 5 s (4 in a row)"),
    ]
    # The beat at 25 s succeeded: the self-stop moved from 30 s to 55 s.
    assert clock.deadlines() == [1030.0, 1055.0]
    probe.go.set()
    await clock.settle()
    assert finished(task).outcome == Succeeded({"files": 3})


async def test_the_self_stop_counts_from_when_the_successful_beat_was_sent(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The database renewed the lease somewhere between sending and answering, so the
    deadline counts from the send: a slow answer does not eat into the margin."""
    answer: asyncio.Future[Beat] = asyncio.get_running_loop().create_future()
    store.beats = [answer]
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(14)
    answer.set_result(Beat.ALIVE)
    await clock.settle()
    assert clock.deadlines() == [1020.0, 1040.0]
    await clock.advance(25.999)
    assert probe.events == [(0.0, "started")]
    await clock.advance(0.001)
    assert probe.events == [(0.0, "started"), (40.0, "cancelled")]
    assert finished(task).outcome == SelfStopped()
    assert store.calls == [hb(10.0), hb(20.0), hb(30.0)]
    assert logs(caplog)[-1] == SELF_STOPPED_30


async def test_settings_drive_the_heartbeat_interval_the_lease_and_the_self_stop(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    settings = ExecutorSettings(lease_seconds=40, heartbeat_seconds=5, shutdown_grace_seconds=3)
    task = await start(make(store, clock, probe, settings))
    await clock.advance(19.999)
    assert not probe.ctx.cancelled.is_set()
    await clock.advance(0.001)
    assert finished(task).outcome == SelfStopped()
    assert store.calls == [hb(5.0, 40.0), hb(10.0, 40.0), hb(15.0, 40.0)]
    assert logs(caplog)[-1] == (
        "WARNING",
        "work item 7 attempt 3: self-stopped: no successful heartbeat for 20 s "
        "(half the 40 s lease); writing nothing, lease recovery will requeue it",
    )


# --- a frozen process -----------------------------------------------------------------


async def test_ensure_alive_after_a_frozen_jump_past_half_a_lease_stops_before_writing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGSTOP for 30 s: on waking, the handler runs before any overdue timer does.
    ensure_alive() must see the deadline on the monotonic clock itself."""
    written: list[str] = []
    raised: list[AttemptStopped] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        await go.wait()
        try:
            ctx.ensure_alive()
        except AttemptStopped as exc:
            raised.append(exc)
            raise
        written.append("thumbnail.webp")
        return {}

    go = asyncio.Event()
    task = await start(make(store, clock, handler))
    await clock.settle()
    clock.jump(30)
    go.set()
    await clock.settle()
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert written == []
    assert [exc.reason for exc in raised] == [StopReason.SELF_STOPPED]
    assert store.calls == []
    assert logs(caplog) == [SELF_STOPPED_30]
    await assert_quiet(clock)


async def test_ensure_alive_just_before_half_a_lease_lets_the_write_happen(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    written: list[str] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        await go.wait()
        ctx.ensure_alive()
        written.append("thumbnail.webp")
        return {"written": 1}

    go = asyncio.Event()
    task = await start(make(store, clock, handler))
    await clock.settle()
    clock.jump(29.999)
    go.set()
    await clock.settle()
    assert written == ["thumbnail.webp"]
    assert finished(task).outcome == Succeeded({"written": 1})
    assert store.calls == [(29.999, "complete", 7, 3, {"written": 1})]
    assert logs(caplog) == []


async def test_a_frozen_process_sends_no_heartbeat_once_past_the_deadline(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """On waking, the overdue heartbeat (due at 10 s) fires before the self-stop timer
    (due at 30 s); it must stop the attempt rather than renew a claim it gave up."""
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.settle()
    clock.jump(31)
    await clock.advance(0)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert store.calls == []
    assert probe.events == [(0.0, "started"), (31.0, "cancelled")]
    assert logs(caplog) == [
        (
            "WARNING",
            "work item 7 attempt 3: self-stopped: no successful heartbeat for 31 s "
            "(half the 60 s lease); writing nothing, lease recovery will requeue it",
        )
    ]
    await assert_quiet(clock)


async def test_an_answer_that_arrives_after_the_deadline_does_not_revive_the_attempt(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    answer: asyncio.Future[Beat] = asyncio.get_running_loop().create_future()
    store.beats = [answer]
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(10)
    clock.jump(25)  # frozen with the beat in flight; no timer has run since
    answer.set_result(Beat.ALIVE)
    await clock.settle()
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert store.calls == [hb(10.0)]
    assert probe.events == [(0.0, "started"), (35.0, "cancelled")]
    assert logs(caplog) == [
        (
            "WARNING",
            "work item 7 attempt 3: self-stopped: no successful heartbeat for 35 s "
            "(half the 60 s lease); writing nothing, lease recovery will requeue it",
        )
    ]
    await assert_quiet(clock)


# --- lost and cancelled -----------------------------------------------------------------


async def test_a_lost_item_cancels_the_handler_and_writes_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [Beat.LOST]
    probe = Probe(clock, stop_after=4)
    task = await start(make(store, clock, probe))
    await clock.advance(10)
    assert probe.ctx.cancelled.is_set()
    with pytest.raises(AttemptStopped) as raised:
        probe.ctx.ensure_alive()
    assert raised.value.reason is StopReason.LOST
    await clock.advance(4)
    assert finished(task) == RunResult(Lost(), None, False)
    assert probe.events == [(0.0, "started"), (10.0, "cancelled"), (14.0, "stopped")]
    assert store.calls == [hb(10.0)]  # no more heartbeats while the handler stopped
    assert logs(caplog) == [
        ("WARNING", "work item 7 attempt 3: lost the item; stopping the handler, writing nothing")
    ]
    await assert_quiet(clock)


async def test_a_fenced_transaction_that_finds_the_item_lost_ends_the_attempt_as_lost(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.fenced_error = AttemptLost()

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        async with ctx.fenced():
            pass
        return {}

    task = await start(make(store, clock, handler))
    await clock.settle()
    assert finished(task) == RunResult(Lost(), None, False)
    assert store.calls == [(0.0, "fenced", 7, 3)]
    assert logs(caplog) == [
        ("WARNING", "work item 7 attempt 3: lost the item; stopping the handler, writing nothing")
    ]
    await assert_quiet(clock)


async def test_a_cancel_request_cancels_the_handler_and_writes_cancel_not_fail(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [Beat.CANCEL_REQUESTED]
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(10)
    assert finished(task) == RunResult(Cancelled(), Cancel(), True)
    assert probe.events == [(0.0, "started"), (10.0, "cancelled")]
    assert store.calls == [hb(10.0), (10.0, "cancel", 7, 3)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: cancel requested, stopping the handler")
    ]
    await assert_quiet(clock)


async def test_heartbeats_go_on_while_a_cancelled_handler_winds_down(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """The handler needs 12 s to stop and then raises: the item is still cancelled,
    not failed, and the lease is kept meanwhile (the request is logged once)."""
    store.beat_default = Beat.CANCEL_REQUESTED
    interrupted = RuntimeError("interrupted")

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await clock.sleep(12)
            raise interrupted from None
        return {}

    settings = timing(shutdown_grace_seconds=15)
    task = await start(make(store, clock, handler, settings))
    await clock.advance(21.999)
    assert not task.done()
    await clock.advance(0.001)
    assert finished(task) == RunResult(Cancelled(), Cancel(), True)
    assert store.calls == [hb(10.0), hb(20.0), (22.0, "cancel", 7, 3)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: cancel requested, stopping the handler"),
        (
            "WARNING",
            "work item 7 attempt 3: the handler raised while stopping (cancel requested): "
            "RuntimeError: interrupted",
        ),
    ]
    exc_info = log_records(caplog)[-1].exc_info
    assert exc_info is not None and exc_info[1] is interrupted
    await assert_quiet(clock)


async def test_a_cancel_request_does_not_renew_the_self_stop(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Only ALIVE re-arms the self-stop; a handler slow to honour a cancel request that
    outlives the deadline self-stops, and then nothing is written, not even cancel."""
    store.beat_default = Beat.CANCEL_REQUESTED
    probe = Probe(clock, stop_after=12)
    settings = ExecutorSettings(lease_seconds=20, heartbeat_seconds=5, shutdown_grace_seconds=15)
    task = await start(make(store, clock, probe, settings))
    await clock.advance(9.999)
    assert store.calls == [hb(5.0, 20.0)]
    await clock.advance(0.001)
    await clock.advance(7)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert probe.events == [(0.0, "started"), (5.0, "cancelled"), (17.0, "stopped")]
    assert store.calls == [hb(5.0, 20.0)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: cancel requested, stopping the handler"),
        (
            "WARNING",
            "work item 7 attempt 3: self-stopped: no successful heartbeat for 10 s "
            "(half the 20 s lease); writing nothing, lease recovery will requeue it",
        ),
    ]
    await assert_quiet(clock)


async def test_a_handler_that_finishes_despite_a_cancel_request_keeps_its_work(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beats = [Beat.CANCEL_REQUESTED]

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return {"files": 9}  # its last step completed as the request came in
        return {}

    task = await start(make(store, clock, handler))
    await clock.advance(10)
    assert finished(task) == RunResult(Succeeded({"files": 9}), Complete({"files": 9}), True)
    assert store.calls == [hb(10.0), (10.0, "complete", 7, 3, {"files": 9})]


# --- shutdown --------------------------------------------------------------------------


async def test_shutdown_cancels_the_handler_and_releases_the_item(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    probe = Probe(clock)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(5)
    shutdown.set()
    await clock.settle()
    assert finished(task) == RunResult(Released(), Release(), True)
    assert probe.events == [(0.0, "started"), (5.0, "cancelled")]
    assert store.calls == [(5.0, "release", 7, 3)]
    assert logs(caplog) == [("INFO", "work item 7 attempt 3: shutting down, stopping the handler")]
    await assert_quiet(clock)


async def test_shutdown_waits_on_the_clock_for_a_handler_slow_to_stop(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    probe = Probe(clock, stop_after=7)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(5)
    shutdown.set()
    await clock.advance(6.999)
    assert not task.done()
    assert store.calls == [hb(10.0)]  # the lease is kept while it stops
    await clock.advance(0.001)
    assert finished(task) == RunResult(Released(), Release(), True)
    assert probe.events == [(0.0, "started"), (5.0, "cancelled"), (12.0, "stopped")]
    assert store.calls == [hb(10.0), (12.0, "release", 7, 3)]
    await assert_quiet(clock)


async def test_shutdown_abandons_a_handler_that_outlasts_the_grace_and_writes_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Releasing now would let another attempt start on this config while the handler
    may still touch its files; the lease expires instead and recovery requeues it."""
    shutdown = asyncio.Event()
    probe = Probe(clock, stop_after=None)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(5)
    shutdown.set()
    await clock.advance(9.999)
    assert not task.done()
    await clock.advance(0.001)
    assert finished(task) == RunResult(Abandoned(StopReason.SHUTDOWN), None, False)
    assert store.calls == [hb(10.0)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: shutting down, stopping the handler"),
        (
            "ERROR",
            "work item 7 attempt 3: the handler did not stop within 10 s of being asked "
            "(shutting down); writing nothing, lease recovery will requeue the item",
        ),
    ]
    # Still running, cancelled once more, and told it is stopped if it looks.
    assert probe.events == [(0.0, "started"), (5.0, "cancelled"), (15.0, "cancelled again")]
    with pytest.raises(AttemptStopped) as raised:
        probe.ctx.ensure_alive()
    assert raised.value.reason is StopReason.SHUTDOWN
    assert clock.deadlines() == []
    probe.let_go.set()
    await assert_quiet(clock)
    assert store.calls == [hb(10.0)]


async def test_a_shutdown_already_set_releases_without_starting_the_handler(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    shutdown.set()
    probe = Probe(clock)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.settle()
    assert finished(task) == RunResult(Released(), Release(), True)
    assert probe.events == []
    assert store.calls == [(0.0, "release", 7, 3)]
    await assert_quiet(clock)


async def test_a_handler_that_finishes_before_noticing_the_shutdown_records_success(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return {"files": 1}
        return {}

    task = await start(make(store, clock, handler), shutdown=shutdown)
    await clock.advance(3)
    shutdown.set()
    await clock.settle()
    assert finished(task) == RunResult(Succeeded({"files": 1}), Complete({"files": 1}), True)
    assert store.calls == [(3.0, "complete", 7, 3, {"files": 1})]


async def test_a_workers_watch_of_the_shutdown_outlives_its_attempts_and_forgets_them(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A Worker hands every attempt one watch of its shutdown (worker.Worker.run): an
    attempt that ended stops listening to it, so a shutdown months later stops only the
    attempt running then, and the watch holds no attempt that is over."""
    shutdown = asyncio.Event()
    watch = shutdown_watch(shutdown)
    probe = Probe(clock)
    executor = make(store, clock, probe)
    first = asyncio.create_task(executor.run(ITEM, watch))
    await clock.advance(1)
    probe.go.set()
    await clock.settle()
    assert finished(first) == RunResult(Succeeded({"files": 3}), Complete({"files": 3}), True)
    assert not watch.done()  # the Worker's, not the attempt's to cancel
    second_item = dataclasses.replace(ITEM, attempt=4)
    probe.go.clear()
    second = asyncio.create_task(executor.run(second_item, watch))
    await clock.advance(1)
    caplog.clear()
    shutdown.set()
    await clock.settle()
    assert finished(second) == RunResult(Released(), Release(), True)
    # One line, the running attempt's: the first one heard nothing of it.
    assert [(r.attempt, r.getMessage()) for r in log_records(caplog)] == [  # type: ignore[attr-defined]
        (4, "work item 7 attempt 4: shutting down, stopping the handler")
    ]
    assert store.calls[-1] == (2.0, "release", 7, 4)
    watch.cancel()
    await assert_quiet(clock)


async def test_a_watch_already_done_releases_without_starting_the_handler(
    clock: FakeClock, store: ScriptedStore
) -> None:
    # The Worker's watch fires once its event is set: an attempt handed a watch that has
    # fired already is stopped before its handler takes a step.
    shutdown = asyncio.Event()
    watch = shutdown_watch(shutdown)
    shutdown.set()
    await clock.settle()
    assert watch.done()
    probe = Probe(clock)
    task = await start(make(store, clock, probe), shutdown=watch)  # type: ignore[arg-type]
    await clock.settle()
    assert finished(task) == RunResult(Released(), Release(), True)
    assert probe.events == []
    assert store.calls == [(0.0, "release", 7, 3)]
    await assert_quiet(clock)


async def test_a_watch_cancelled_is_no_request_to_stop(
    clock: FakeClock, store: ScriptedStore
) -> None:
    watch = shutdown_watch(asyncio.Event())
    watch.cancel()
    await clock.settle()
    probe = Probe(clock)
    task = await start(make(store, clock, probe), shutdown=watch)  # type: ignore[arg-type]
    probe.go.set()
    await clock.settle()
    assert finished(task) == RunResult(Succeeded({"files": 3}), Complete({"files": 3}), True)
    await assert_quiet(clock)


async def test_a_cancel_request_during_shutdown_cancels_rather_than_releases(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    store.beats = [Beat.CANCEL_REQUESTED]
    probe = Probe(clock, stop_after=7)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(5)
    shutdown.set()
    await clock.advance(7)
    assert finished(task) == RunResult(Cancelled(), Cancel(), True)
    assert store.calls == [hb(10.0), (12.0, "cancel", 7, 3)]
    assert probe.events == [(0.0, "started"), (5.0, "cancelled"), (12.0, "stopped")]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: shutting down, stopping the handler"),
        ("INFO", "work item 7 attempt 3: cancel requested, stopping the handler"),
    ]


async def test_a_shutdown_during_a_cancel_request_still_cancels(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    store.beats = [Beat.CANCEL_REQUESTED]
    probe = Probe(clock, stop_after=7)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(12)
    shutdown.set()
    await clock.advance(5)
    assert finished(task) == RunResult(Cancelled(), Cancel(), True)
    assert store.calls == [hb(10.0), (17.0, "cancel", 7, 3)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: cancel requested, stopping the handler")
    ]


async def test_an_item_lost_during_shutdown_is_not_released(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    shutdown = asyncio.Event()
    store.beats = [Beat.LOST]
    probe = Probe(clock, stop_after=7)
    task = await start(make(store, clock, probe), shutdown=shutdown)
    await clock.advance(5)
    shutdown.set()
    await clock.advance(7)
    assert finished(task) == RunResult(Lost(), None, False)
    assert store.calls == [hb(10.0)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: shutting down, stopping the handler"),
        ("WARNING", "work item 7 attempt 3: lost the item; stopping the handler, writing nothing"),
    ]


async def test_cancelling_run_itself_abandons_the_attempt_and_writes_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.advance(5)
    task.cancel()
    await clock.settle()
    assert task.cancelled()
    assert probe.events == [(0.0, "started"), (5.0, "cancelled")]
    assert store.calls == []
    assert logs(caplog) == []
    await assert_quiet(clock)


# --- the store's answer to the outcome ---------------------------------------------------


async def test_a_write_the_store_does_not_apply_is_logged_as_lost(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.writes = False

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        return {"files": 3}

    task = await start(make(store, clock, handler))
    await clock.settle()
    assert finished(task) == RunResult(Succeeded({"files": 3}), Complete({"files": 3}), False)
    assert logs(caplog) == [
        (
            "WARNING",
            "work item 7 attempt 3: complete not applied: the attempt had lost the item",
        )
    ]


async def test_a_write_that_fails_is_logged_and_left_to_lease_recovery(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.writes = DB_DOWN
    shutdown = asyncio.Event()
    shutdown.set()
    task = await start(make(store, clock, Probe(clock)), shutdown=shutdown)
    await clock.settle()
    assert finished(task) == RunResult(Released(), Release(), False)
    assert store.calls == [(0.0, "release", 7, 3)]
    assert logs(caplog) == [
        ("INFO", "work item 7 attempt 3: shutting down, stopping the handler"),
        (
            "ERROR",
            f"work item 7 attempt 3: release failed: {DOWN}; lease recovery will requeue the item",
        ),
    ]


async def test_a_write_that_hangs_gives_up_after_one_heartbeat_interval(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.writes = HANG
    store.beats = [Beat.CANCEL_REQUESTED]
    task = await start(make(store, clock, Probe(clock)))
    await clock.advance(19.999)
    assert not task.done()
    await clock.advance(0.001)
    assert finished(task) == RunResult(Cancelled(), Cancel(), False)
    assert store.calls == [hb(10.0), (10.0, "cancel", 7, 3)]
    assert store.abandoned == [(20.0, "cancel")]
    assert logs(caplog)[-1] == (
        "ERROR",
        "work item 7 attempt 3: cancel timed out after 10 s; lease recovery will requeue the item",
    )
    await assert_quiet(clock)


# --- the handler's context ---------------------------------------------------------------


async def test_the_context_carries_the_item_clock_and_an_item_logger(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.settle()
    ctx = probe.ctx
    assert ctx.item == ITEM
    assert ctx.clock is clock
    assert not ctx.cancelled.is_set()
    ctx.logger.info("hashing %d files", 12)
    assert logs(caplog) == [("INFO", "hashing 12 files")]
    probe.go.set()
    await clock.settle()
    assert finished(task).outcome == Succeeded({"files": 3})


async def test_progress_is_forwarded_with_the_item(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[tuple[WorkItem, dict[str, int]]] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.progress(files=5, bytes=2048)
        ctx.progress(files=6)
        return {}

    on_progress = lambda item, counters: seen.append((item, dict(counters)))  # noqa: E731
    task = await start(make(store, clock, handler, on_progress=on_progress))
    await clock.settle()
    assert finished(task).outcome == Succeeded({})
    assert seen == [(ITEM, {"files": 5, "bytes": 2048}), (ITEM, {"files": 6})]


async def test_a_failing_progress_callback_is_logged_and_ignored(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.progress(files=5)
        return {"files": 5}

    def on_progress(item: WorkItem, counters: Any) -> None:
        raise KeyError("no such gauge")

    task = await start(make(store, clock, handler, on_progress=on_progress))
    await clock.settle()
    assert finished(task).outcome == Succeeded({"files": 5})
    assert logs(caplog) == [("WARNING", "progress callback failed")]
    exc_info = log_records(caplog)[0].exc_info
    assert exc_info is not None and isinstance(exc_info[1], KeyError)


async def test_progress_without_a_callback_does_nothing(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.progress(files=5)
        return {}

    task = await start(make(store, clock, handler))
    await clock.settle()
    assert finished(task).outcome == Succeeded({})
    assert logs(caplog) == []


async def test_progress_is_saved_with_the_next_heartbeat_and_only_when_new(
    clock: FakeClock, store: ScriptedStore
) -> None:
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.settle()
    probe.ctx.progress(found=1)
    probe.ctx.progress(found=2, ingested=1)
    await clock.advance(10)  # the first heartbeat carries the last report
    await clock.advance(10)  # nothing new: the second carries nothing
    probe.ctx.progress(found=3, ingested=2)
    await clock.advance(10)
    assert store.beat_progress == [
        (10.0, {"attempt": 3, "counts": {"found": 2, "ingested": 1}}),
        (30.0, {"attempt": 3, "counts": {"found": 3, "ingested": 2}}),
    ]
    probe.go.set()
    await clock.settle()
    # Every report is saved: the outcome's write needs no save of its own.
    assert finished(task).outcome == Succeeded({"files": 3})
    assert [c[1] for c in store.calls] == ["heartbeat"] * 3 + ["complete"]


async def test_progress_reported_after_the_last_beat_is_saved_right_before_the_release(
    clock: FakeClock, store: ScriptedStore
) -> None:
    """Ctrl-C: the handler reports once more as it stops; the release comes after the
    save, both fenced, so the item says what the interrupted attempt did."""

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.progress(found=5)
        try:
            await clock.sleep(100)
        finally:
            ctx.progress(found=7, ingested=7)
        return {}

    shutdown = asyncio.Event()
    task = await start(make(store, clock, handler), shutdown=shutdown)
    await clock.advance(10)
    shutdown.set()
    await clock.settle()
    assert finished(task).outcome == Released()
    assert store.calls == [
        (10.0, "heartbeat", 7, 3, 60.0),
        (10.0, "save_progress", 7, 3, {"attempt": 3, "counts": {"found": 7, "ingested": 7}}),
        (10.0, "release", 7, 3),
    ]
    assert store.beat_progress == [(10.0, {"attempt": 3, "counts": {"found": 5}})]


async def test_progress_a_failed_heartbeat_carried_goes_with_the_next_one(
    clock: FakeClock, store: ScriptedStore
) -> None:
    store.beats = [DB_DOWN, Beat.ALIVE]
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    await clock.settle()
    probe.ctx.progress(found=1)
    await clock.advance(10)
    await clock.advance(10)
    assert store.beat_progress == [
        (10.0, {"attempt": 3, "counts": {"found": 1}}),
        (20.0, {"attempt": 3, "counts": {"found": 1}}),
    ]
    probe.go.set()
    await clock.settle()
    assert [c[1] for c in store.calls] == ["heartbeat", "heartbeat", "complete"]
    assert finished(task).outcome == Succeeded({"files": 3})


async def test_an_attempt_that_lost_its_item_saves_no_progress(
    clock: FakeClock, store: ScriptedStore
) -> None:
    store.beats = [Beat.LOST]

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.progress(found=1)
        try:
            await clock.sleep(100)
        finally:
            ctx.progress(found=2)
        return {}

    task = await start(make(store, clock, handler))
    await clock.advance(10)
    await clock.settle()
    assert finished(task).outcome == Lost()
    assert [c[1] for c in store.calls] == ["heartbeat"]


async def test_fenced_checks_the_attempt_then_opens_the_stores_transaction(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    connections: list[Any] = []
    store.beats = [Beat.CANCEL_REQUESTED]
    refused: list[AttemptStopped] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        async with ctx.fenced() as conn:
            connections.append(conn)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            try:
                ctx.fenced()
            except AttemptStopped as exc:
                refused.append(exc)
            raise
        return {}

    task = await start(make(store, clock, handler))
    await clock.advance(10)
    assert connections == [store.connection]
    assert [exc.reason for exc in refused] == [StopReason.CANCEL_REQUESTED]
    # The stopped attempt did not even open a transaction.
    assert store.calls == [(0.0, "fenced", 7, 3), hb(10.0), (10.0, "cancel", 7, 3)]
    assert finished(task).outcome == Cancelled()


# --- the self-stop counts from the claim ------------------------------------------------


async def test_the_self_stop_counts_from_when_the_claim_was_sent(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A claim whose answer took 25 s: the lease was set at most 25 s ago, so the
    attempt has 5 s left, not 30."""
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    claimed_at = clock.monotonic()
    await clock.advance(25)
    task = asyncio.create_task(make(store, clock, probe).run(ITEM, claimed_at=claimed_at))
    await clock.advance(4.999)
    assert not probe.ctx.cancelled.is_set()
    await clock.advance(0.001)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    assert logs(caplog)[-1] == SELF_STOPPED_30
    await assert_quiet(clock)


async def test_a_claim_answered_after_half_a_lease_touches_no_file(
    clock: FakeClock, store: ScriptedStore
) -> None:
    written: list[str] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.ensure_alive()  # its very first step, before any timer could run
        written.append("thumbnail.jpg")
        return {}

    claimed_at = clock.monotonic()
    clock.jump(31)
    result = await make(store, clock, handler).run(ITEM, claimed_at=claimed_at)
    # It did no work, so it gives the item back without a stall.
    assert result == RunResult(ClaimedLate(31.0), Release(), True)
    assert written == []
    assert store.calls == [(31.0, "release", 7, 3)]
    await assert_quiet(clock)


async def test_a_claim_answered_exactly_half_a_lease_late_starts_nothing(
    clock: FakeClock, store: ScriptedStore
) -> None:
    claimed_at = clock.monotonic()
    clock.jump(30)
    result = await make(store, clock, Probe(clock)).run(ITEM, claimed_at=claimed_at)
    assert result == RunResult(ClaimedLate(30.0), Release(), True)


async def test_a_claim_answered_just_inside_half_a_lease_runs_its_handler(
    clock: FakeClock, store: ScriptedStore
) -> None:
    ran: list[bool] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        ctx.ensure_alive()
        ran.append(True)
        return {}

    claimed_at = clock.monotonic()
    clock.jump(29.999)
    result = await make(store, clock, handler).run(ITEM, claimed_at=claimed_at)
    assert result.outcome == Succeeded({})
    assert ran == [True]


async def test_a_late_claim_that_recovery_already_took_back_writes_in_vain(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    """Answered after the whole lease, the item may be someone else's already: the
    release is fenced, changes nothing, and the attempt still starts nothing."""
    store.writes = False
    claimed_at = clock.monotonic()
    clock.jump(61)
    result = await make(store, clock, Probe(clock)).run(ITEM, claimed_at=claimed_at)
    assert result == RunResult(ClaimedLate(61.0), Release(), False)
    assert logs(caplog) == [
        (
            "WARNING",
            "work item 7 attempt 3: the claim's answer came 61 s after it was sent (half a "
            "lease is 30 s); starting nothing and giving the item back",
        ),
        ("WARNING", "work item 7 attempt 3: release not applied: the attempt had lost the item"),
    ]


async def test_a_claim_time_in_the_future_counts_as_now(
    clock: FakeClock, store: ScriptedStore
) -> None:
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    task = asyncio.create_task(
        make(store, clock, probe).run(ITEM, claimed_at=clock.monotonic() + 100)
    )
    await clock.advance(29.999)
    assert not probe.ctx.cancelled.is_set()
    await clock.advance(0.001)
    assert finished(task).outcome == SelfStopped()


# --- what the observer is told -----------------------------------------------------------


class Watching:
    """Records the observer calls of the executor (``work.observer.EngineObserver``)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[tuple[float, str]] = []

    def item_ended(self, kind: str, outcome: str, seconds: float) -> None:
        raise AssertionError("the Worker reports an item's end, not the executor")

    def heartbeat_failed(self) -> None:
        self.calls.append((at(self.clock), "heartbeat_failed"))

    def self_stopped(self) -> None:
        self.calls.append((at(self.clock), "self_stopped"))

    def leases_recovered(self, report: Any) -> None:
        raise AssertionError("not the executor's")

    def claim_lost(self) -> None:
        raise AssertionError("not the executor's")


async def test_the_observer_hears_of_each_failed_heartbeat_and_the_self_stop(
    clock: FakeClock, store: ScriptedStore
) -> None:
    store.beats = [DB_DOWN, HANG]
    store.beat_default = DB_DOWN
    watching = Watching(clock)
    executor = Executor(
        store, clock, {"crawl": Probe(clock)}, timing(), logging.getLogger(LOGGER), None, watching
    )
    task = await start(executor)
    await clock.advance(30)
    assert finished(task) == RunResult(SelfStopped(), None, False)
    # A failed beat at 10 s; the one sent at 20 s hangs, and is abandoned, not counted,
    # when the self-stop comes at 30 s, the moment its own timeout would have.
    assert watching.calls == [(10.0, "heartbeat_failed"), (30.0, "self_stopped")]
    await assert_quiet(clock)


async def test_the_observer_hears_nothing_of_an_attempt_that_went_well(
    clock: FakeClock, store: ScriptedStore
) -> None:
    watching = Watching(clock)
    probe = Probe(clock)
    executor = Executor(
        store, clock, {"crawl": probe}, timing(), logging.getLogger(LOGGER), None, watching
    )
    task = await start(executor)
    await clock.advance(25)  # two heartbeats, both alive
    probe.go.set()
    await clock.settle()
    assert finished(task).outcome == Succeeded(probe.result)
    assert watching.calls == []


# --- a bug in the heartbeats ------------------------------------------------------------


class BrokenObserver(NoObserver):
    """An observer with a bug where the heartbeats call it."""

    def heartbeat_failed(self) -> None:
        raise RuntimeError("observer bug")


async def test_a_bug_in_the_heartbeats_stops_the_attempt_at_once_and_is_raised_after_it(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.beat_default = DB_DOWN
    probe = Probe(clock)
    executor = Executor(
        store,
        clock,
        {"crawl": probe},
        timing(),
        logging.getLogger(LOGGER),
        observer=BrokenObserver(),
    )
    task = await start(executor)
    await clock.advance(10)
    # Stopped at the first beat's bug, not half a lease later; nothing written.
    assert probe.events == [(0.0, "started"), (10.0, "cancelled")]
    assert task.done()
    with pytest.raises(RuntimeError, match=r"^observer bug$"):
        task.result()
    assert store.calls == [hb(10.0)]
    # The bug came before the beat's own warning line.
    assert logs(caplog) == [
        (
            "ERROR",
            "work item 7 attempt 3: the heartbeats stopped on a bug (RuntimeError: observer "
            "bug); stopping the attempt, writing nothing",
        ),
        (
            "WARNING",
            "work item 7 attempt 3: self-stopped: no successful heartbeat for 10 s "
            "(half the 60 s lease); writing nothing, lease recovery will requeue it",
        ),
    ]
    await assert_quiet(clock)


class BeatEndsTheHandler(ScriptedStore):
    """A store whose heartbeat lets the handler end before it answers: the handler's
    verdict and the heartbeats' bug then come on the same turn (a barrier, no timer)."""

    def __init__(self, clock: FakeClock, probe: Probe) -> None:
        super().__init__(clock)
        self.probe = probe

    async def heartbeat(
        self,
        item_id: int,
        attempt: int,
        lease_seconds: float,
        progress: Mapping[str, Any] | None = None,
    ) -> Beat:
        self.probe.go.set()
        return await super().heartbeat(item_id, attempt, lease_seconds, progress)


async def test_a_bug_in_the_heartbeats_as_the_handler_ends_is_raised_after_its_write(
    clock: FakeClock,
) -> None:
    """The outcome is written (the verdict came first), and the bug is raised once its
    answer is read (ADR 0069: the write is sent, then answered), never lost."""
    probe = Probe(clock)
    store = BeatEndsTheHandler(clock, probe)
    store.beat_default = DB_DOWN
    executor = Executor(
        store,
        clock,
        {"crawl": probe},
        timing(),
        logging.getLogger(LOGGER),
        observer=BrokenObserver(),
    )
    task = await start(executor)
    await clock.advance(10)
    await clock.settle()
    assert task.done()
    with pytest.raises(RuntimeError, match=r"^observer bug$"):
        task.result()
    assert store.calls == [hb(10.0), (10.0, "complete", 7, 3, {"files": 3})]
    await assert_quiet(clock)


async def test_heartbeats_cancelled_at_the_end_are_no_bug(
    clock: FakeClock, store: ScriptedStore
) -> None:
    probe = Probe(clock)
    task = await start(make(store, clock, probe))
    probe.go.set()
    await clock.settle()
    assert finished(task).outcome == Succeeded({"files": 3})
