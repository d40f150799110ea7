"""The clocks: FakeClock's timekeeping and firing order, SystemClock, and the clock-driven
waiting helpers (wait_done, wait_with_timeout, abandon)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import weakref
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from typing import Any

import pytest

from safelight.core.clock import Clock, SystemClock, abandon, wait_done, wait_with_timeout
from safelight.testing.fakeclock import FakeClock

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

START = datetime(2026, 1, 1, tzinfo=UTC)


def elapsed(clock: FakeClock) -> float:
    return clock.monotonic() - 1000.0


# --- FakeClock: reading time -------------------------------------------------------------


def test_a_fake_clock_starts_on_new_year_2026_at_monotonic_1000() -> None:
    clock: Clock = FakeClock()
    assert clock.now() == START
    assert clock.now().tzinfo is UTC
    assert clock.monotonic() == 1000.0


def test_a_fake_clock_takes_its_start_times() -> None:
    start = datetime(2030, 6, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    clock = FakeClock(start, monotonic_start=5.0)
    assert clock.now() == start
    assert clock.monotonic() == 5.0


def test_a_fake_clock_refuses_a_naive_start() -> None:
    with pytest.raises(ValueError, match=r"^start must be timezone-aware$"):
        FakeClock(datetime(2026, 1, 1))


async def test_a_fake_clock_has_the_store_record_transitions_at_its_own_time(
    clock: FakeClock,
) -> None:
    # Leases and the attempt history of a test follow the fake clock (ADR 0015).
    assert clock.transition_time() == START
    await clock.advance(2.5)
    assert clock.transition_time() == START + timedelta(seconds=2.5) == clock.now()


async def test_advance_moves_wall_and_monotonic_time_together(clock: FakeClock) -> None:
    await clock.advance(90.5)
    assert clock.now() == START + timedelta(seconds=90.5)
    assert clock.monotonic() == 1090.5


async def test_time_is_exact_to_the_nanosecond_without_float_drift(clock: FakeClock) -> None:
    await clock.advance(29.999)
    await clock.advance(0.001)
    assert clock.monotonic() == 1030.0
    assert clock.now() == START + timedelta(seconds=30)
    clock.jump(0.000_001)
    assert clock.now() == START + timedelta(seconds=30, microseconds=1)


async def test_time_does_not_go_back(clock: FakeClock) -> None:
    with pytest.raises(ValueError, match=r"^cannot advance by -1 s: time does not go back$"):
        await clock.advance(-1)
    with pytest.raises(ValueError, match=r"^cannot jump by -0.5 s: time does not go back$"):
        clock.jump(-0.5)
    assert clock.monotonic() == 1000.0


async def test_advance_by_zero_and_jump_by_zero_are_allowed(clock: FakeClock) -> None:
    await clock.advance(0)
    clock.jump(0)
    assert clock.monotonic() == 1000.0


# --- FakeClock: timers -------------------------------------------------------------------


async def test_a_timer_fires_at_its_deadline_not_before(clock: FakeClock) -> None:
    fired: list[float] = []
    clock.call_later(30, lambda: fired.append(elapsed(clock)))
    await clock.advance(29.999)
    assert fired == []
    await clock.advance(0.001)
    assert fired == [30.0]


async def test_timers_fire_in_deadline_order_each_at_its_own_time(clock: FakeClock) -> None:
    fired: list[tuple[str, float]] = []
    clock.call_later(20, lambda: fired.append(("c", elapsed(clock))))
    clock.call_later(5, lambda: fired.append(("a", elapsed(clock))))
    clock.call_later(10, lambda: fired.append(("b", elapsed(clock))))
    clock.call_later(25, lambda: fired.append(("d", elapsed(clock))))
    await clock.advance(24)
    assert fired == [("a", 5.0), ("b", 10.0), ("c", 20.0)]
    assert clock.monotonic() == 1024.0
    assert clock.deadlines() == [1025.0]


async def test_timers_with_one_deadline_fire_in_the_order_they_were_armed(
    clock: FakeClock,
) -> None:
    fired: list[str] = []
    for name in "xyz":
        clock.call_later(3, partial(fired.append, name))
    await clock.advance(3)
    assert fired == ["x", "y", "z"]


async def test_a_negative_delay_is_already_due_and_fires_first(clock: FakeClock) -> None:
    fired: list[tuple[str, float]] = []
    clock.call_later(0, lambda: fired.append(("zero", elapsed(clock))))
    clock.call_later(-5, lambda: fired.append(("negative", elapsed(clock))))
    assert clock.deadlines() == [995.0, 1000.0]
    await clock.advance(0)
    assert fired == [("negative", 0.0), ("zero", 0.0)]


async def test_a_cancelled_timer_is_removed_and_never_fires(clock: FakeClock) -> None:
    fired: list[str] = []
    keep = clock.call_later(10, lambda: fired.append("keep"))
    drop = clock.call_later(5, lambda: fired.append("drop"))
    assert clock.deadlines() == [1005.0, 1010.0]
    drop.cancel()
    drop.cancel()  # twice is fine
    assert clock.deadlines() == [1010.0]
    await clock.advance(10)
    assert fired == ["keep"]
    keep.cancel()  # after it fired: a no-op
    assert clock.deadlines() == []


async def test_a_timer_armed_while_advancing_fires_in_the_same_advance(clock: FakeClock) -> None:
    fired: list[tuple[str, float]] = []

    def first() -> None:
        fired.append(("first", elapsed(clock)))
        clock.call_later(4, lambda: fired.append(("second", elapsed(clock))))

    clock.call_later(3, first)
    await clock.advance(7)
    assert fired == [("first", 3.0), ("second", 7.0)]


async def test_a_task_woken_by_one_timer_runs_before_the_next_timer_fires(
    clock: FakeClock,
) -> None:
    seen: list[tuple[str, float]] = []

    async def sleeper() -> None:
        await clock.sleep(10)
        seen.append(("woke", elapsed(clock)))
        await clock.sleep(0)
        seen.append(("woke again", elapsed(clock)))

    task = asyncio.create_task(sleeper())
    await clock.wait_for_timers(1)  # the sleeper's timer is armed first
    clock.call_later(10, lambda: seen.append(("timer", elapsed(clock))))
    await clock.advance(10)
    assert seen == [("woke", 10.0), ("timer", 10.0), ("woke again", 10.0)]
    assert task.done()


async def test_an_exception_in_a_timer_callback_reaches_the_test(clock: FakeClock) -> None:
    def boom() -> None:
        raise RuntimeError("boom")

    clock.call_later(1, boom)
    with pytest.raises(RuntimeError, match=r"^boom$"):
        await clock.advance(2)
    assert clock.monotonic() == 1001.0
    assert clock.deadlines() == []


# --- FakeClock: sleeping, settling, jumping ----------------------------------------------


async def test_sleep_returns_once_advanced_past_its_deadline(clock: FakeClock) -> None:
    task = asyncio.create_task(clock.sleep(10))
    await clock.wait_for_timers(1)
    assert clock.deadlines() == [1010.0]
    await clock.advance(9.999)
    assert not task.done()
    await clock.advance(0.001)
    assert task.done()
    assert clock.deadlines() == []


async def test_sleep_zero_waits_for_the_next_advance(clock: FakeClock) -> None:
    task = asyncio.create_task(clock.sleep(0))
    await clock.settle()
    assert not task.done()
    await clock.advance(0)
    assert task.done()


async def test_cancelling_a_sleeper_removes_its_timer(clock: FakeClock) -> None:
    task = asyncio.create_task(clock.sleep(10))
    await clock.wait_for_timers(1)
    task.cancel()
    await clock.settle()
    assert task.cancelled()
    assert clock.deadlines() == []


async def test_settle_lets_a_chain_of_wake_ups_run_without_moving_time(
    clock: FakeClock,
) -> None:
    events = [asyncio.Event() for _ in range(20)]

    async def relay(i: int) -> None:
        await events[i].wait()
        events[i + 1].set()

    tasks = [asyncio.create_task(relay(i)) for i in range(19)]
    events[0].set()
    await clock.settle()
    assert events[19].is_set()
    assert all(task.done() for task in tasks)
    assert clock.monotonic() == 1000.0


async def test_settle_and_wait_for_timers_take_no_real_time(clock: FakeClock) -> None:
    async def parks_late() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        await clock.sleep(1)

    task = asyncio.create_task(parks_late())
    # Real-time guards only: each must return at once, not after a real second.
    await asyncio.wait_for(clock.wait_for_timers(1), 0.5)
    await asyncio.wait_for(clock.settle(), 0.5)
    await clock.advance(1)
    assert task.done()


BUSY = (
    r"^more than 200 timers fell due at one instant: "
    r"something keeps arming timers that are already due$"
)


async def test_a_busy_loop_of_timers_already_due_is_reported_not_hung(clock: FakeClock) -> None:
    fired: list[float] = []

    def again() -> None:
        fired.append(elapsed(clock))
        clock.call_later(0, again)

    clock.call_later(0, again)
    with pytest.raises(RuntimeError, match=BUSY):
        await asyncio.wait_for(clock.advance(1), 1)  # the guard only matters if broken
    assert fired == [0.0] * 200
    assert clock.monotonic() == 1000.0


async def test_a_busy_loop_after_time_moved_is_reported_too(clock: FakeClock) -> None:
    fired: list[float] = []

    def again() -> None:
        fired.append(elapsed(clock))
        clock.call_later(-1, again)

    clock.call_later(2, again)
    with pytest.raises(RuntimeError, match=BUSY):
        await asyncio.wait_for(clock.advance(3), 1)
    assert fired == [2.0] * 200
    assert clock.monotonic() == 1002.0


async def test_two_hundred_timers_at_one_instant_are_not_a_busy_loop(clock: FakeClock) -> None:
    fired: list[int] = []
    for i in range(200):
        clock.call_later(2, partial(fired.append, i))
    await clock.advance(3)
    assert fired == list(range(200))
    assert clock.monotonic() == 1003.0


async def test_wait_for_timers_returns_once_enough_are_parked(clock: FakeClock) -> None:
    async def parks_late() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        await clock.sleep(1)

    task = asyncio.create_task(parks_late())
    clock.call_later(1, lambda: None)
    await clock.wait_for_timers(2)
    assert clock.deadlines() == [1001.0, 1001.0]
    await clock.advance(1)
    assert task.done()


async def test_wait_for_timers_fails_when_they_never_appear(clock: FakeClock) -> None:
    clock.call_later(1, lambda: None)
    with pytest.raises(AssertionError, match=r"^expected 2 pending timers, found 1$"):
        await clock.wait_for_timers(2)


async def test_jump_moves_time_without_firing_then_advance_fires_what_is_due(
    clock: FakeClock,
) -> None:
    fired: list[tuple[str, float]] = []
    clock.call_later(30, lambda: fired.append(("thirty", elapsed(clock))))
    clock.call_later(10, lambda: fired.append(("ten", elapsed(clock))))
    clock.call_later(45, lambda: fired.append(("forty-five", elapsed(clock))))
    clock.jump(40)
    assert fired == []
    assert clock.monotonic() == 1040.0
    assert clock.now() == START + timedelta(seconds=40)
    await clock.advance(0)
    # Overdue timers fire in deadline order, at the present: time never goes back.
    assert fired == [("ten", 40.0), ("thirty", 40.0)]
    assert clock.deadlines() == [1045.0]
    await clock.advance(5)
    assert fired[-1] == ("forty-five", 45.0)


# --- SystemClock -------------------------------------------------------------------------


def test_the_system_clock_leaves_transition_times_to_the_database() -> None:
    # None: every statement stamps its transition with the database's own clock.
    clock: Clock = SystemClock()
    assert clock.transition_time() is None


async def test_the_system_clock_reads_utc_and_a_monotonic_clock() -> None:
    clock: Clock = SystemClock()
    now = clock.now()
    assert now.tzinfo is UTC
    assert abs(now - datetime.now(UTC)) < timedelta(seconds=5)
    first = clock.monotonic()
    assert clock.monotonic() >= first


async def test_the_system_clock_sleeps_and_fires_timers_on_the_event_loop() -> None:
    clock = SystemClock()
    await clock.sleep(0)
    await clock.sleep(-1)
    fired = asyncio.get_running_loop().create_future()
    handle = clock.call_later(0, lambda: fired.set_result("fired"))
    assert await asyncio.wait_for(fired, 5) == "fired"
    handle.cancel()
    cancelled: list[str] = []
    clock.call_later(-1, lambda: cancelled.append("ran")).cancel()
    await clock.sleep(0)
    await clock.sleep(0)
    assert cancelled == []


# --- wait_done, wait_with_timeout, abandon -----------------------------------------------


async def test_wait_done_returns_true_when_the_future_finishes_in_time(clock: FakeClock) -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(wait_done(clock, future, 10))
    await clock.advance(4)
    future.set_result("ok")
    await clock.settle()
    assert waiter.result() is True
    assert clock.deadlines() == []
    assert clock.monotonic() == 1004.0


async def test_wait_done_returns_false_at_the_deadline_and_leaves_the_future(
    clock: FakeClock,
) -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(wait_done(clock, future, 10))
    await clock.advance(9.999)
    assert not waiter.done()
    await clock.advance(0.001)
    assert waiter.result() is False
    assert not future.cancelled()
    # Finishing after the deadline is harmless: the late wake-up finds it already woken.
    future.set_result("late")
    await clock.settle()


async def test_wait_done_does_not_read_a_failed_future(clock: FakeClock) -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    waiter = asyncio.create_task(wait_done(clock, future, 10))
    await clock.settle()
    future.set_exception(ValueError("bad"))
    await clock.settle()
    assert waiter.result() is True
    with pytest.raises(ValueError, match=r"^bad$"):
        future.result()


async def test_wait_with_timeout_returns_the_result_in_time(clock: FakeClock) -> None:
    async def answer() -> str:
        await clock.sleep(3)
        return "answer"

    waiter = asyncio.create_task(wait_with_timeout(clock, answer(), 5))
    await clock.advance(3)
    assert waiter.result() == "answer"
    assert clock.deadlines() == []


async def test_wait_with_timeout_raises_what_the_work_raised(clock: FakeClock) -> None:
    async def fails() -> str:
        raise KeyError("nope")

    waiter = asyncio.create_task(wait_with_timeout(clock, fails(), 5))
    await clock.settle()
    with pytest.raises(KeyError, match="nope"):
        waiter.result()


async def test_wait_with_timeout_gives_up_at_the_deadline_without_waiting_for_the_work(
    clock: FakeClock,
) -> None:
    """The work ignores its cancellation, like a call on a dead connection: the timeout
    still returns at the deadline, and the work is cancelled and left to finish."""
    cancelled_at: list[float] = []
    release = asyncio.Event()

    async def stubborn() -> str:
        try:
            await release.wait()
        except asyncio.CancelledError:
            cancelled_at.append(elapsed(clock))  # ignored, once
        await release.wait()
        raise ConnectionError("finally gave up")

    waiter = asyncio.create_task(wait_with_timeout(clock, stubborn(), 10))
    await clock.advance(9.999)
    assert not waiter.done()
    await clock.advance(0.001)
    with pytest.raises(TimeoutError):
        waiter.result()
    assert cancelled_at == [10.0]
    assert len(asyncio.all_tasks()) == 2  # this test and the abandoned work
    release.set()
    await clock.settle()
    assert asyncio.all_tasks() == {asyncio.current_task()}
    # Its ConnectionError was retrieved: the loop_errors fixture sees no report.


async def test_a_finished_result_wins_over_a_deadline_falling_due_at_once(
    clock: FakeClock,
) -> None:
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    clock.call_later(5, lambda: future.set_result("just in time"))
    waiter = asyncio.create_task(wait_with_timeout(clock, future, 5))
    await clock.advance(5)
    assert waiter.result() == "just in time"


async def test_cancelling_the_waiter_cancels_and_abandons_the_work(clock: FakeClock) -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def work() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    waiter = asyncio.create_task(wait_with_timeout(clock, work(), 10))
    await clock.settle()
    assert started.is_set()
    waiter.cancel()
    await clock.settle()
    assert waiter.cancelled()
    assert cancelled == [True]
    assert clock.deadlines() == []
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_an_abandoned_task_that_ignores_cancellation_is_kept_alive() -> None:
    """The loop only references tasks weakly; a stuck task with no other reference would
    be garbage-collected while pending ("Task was destroyed but it is pending!")."""

    async def stuck() -> None:
        with contextlib.suppress(asyncio.CancelledError):  # ignores its first cancellation
            await asyncio.get_running_loop().create_future()
        await asyncio.get_running_loop().create_future()

    task = asyncio.create_task(stuck())
    ref = weakref.ref(task)
    await asyncio.sleep(0)
    abandon(task)
    del task
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()
    stuck_task = ref()
    assert stuck_task is not None
    assert not stuck_task.done()
    # Cancelled again it finishes, and is let go.
    stuck_task.cancel()
    del stuck_task
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()
    assert ref() is None


async def test_an_abandoned_task_is_let_go_once_it_finishes() -> None:
    async def fails_when_cancelled() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise OSError("connection reset") from None

    task = asyncio.create_task(fails_when_cancelled())
    await asyncio.sleep(0)
    ref = weakref.ref(task)
    abandon(task)
    del task
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()
    assert ref() is None


async def test_abandoning_a_finished_task_retrieves_its_exception() -> None:
    async def fails() -> None:
        raise OSError("gone")

    task: asyncio.Task[Any] = asyncio.create_task(fails())
    await asyncio.sleep(0)
    assert task.done()
    abandon(task)
    await asyncio.sleep(0)
    # The loop_errors fixture would see "Task exception was never retrieved" otherwise.
