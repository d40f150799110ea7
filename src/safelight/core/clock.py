"""The one source of time for everything under ``src/``.

Every part that reads or waits on time takes a :class:`Clock`. Production uses
:class:`SystemClock`; tests use :class:`safelight.testing.fakeclock.FakeClock`, which moves
only when the test advances it, so no test sleeps for real to wait for a deadline.

Deadlines must therefore be built from the clock's own timers. ``asyncio.timeout`` and
``asyncio.wait_for`` run on the event loop's real time, which a fake clock cannot drive:
use :func:`wait_with_timeout` (or :func:`wait_done`) instead.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class TimerHandle(Protocol):
    def cancel(self) -> None:
        """Make sure the callback does not run; a no-op once it has run."""
        ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC: the enqueue's place in the queue, the
        library's rows, the schedules."""
        ...

    def transition_time(self) -> datetime | None:
        """The time the store records a work item's transition at: a claim, a
        heartbeat, a lease expiry, an end. ``None`` means the database's own clock,
        read inside the statement that makes the transition (docs/state-machine.md,
        ADR 0015); a clock that gives a time makes every statement record that one
        instead, so that a test drives the attempt history from its fake clock."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; for deadlines inside one process."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Return once ``seconds`` have passed on this clock (at once if ``seconds <= 0``)."""
        ...

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback`` once ``seconds`` have passed on this clock."""
        ...


class SystemClock:
    """The real clock: UTC wall time, ``time.monotonic`` and the event loop's timers.

    The event loop's clock is monotonic too, so a timer armed here fires on schedule
    even if the wall clock is stepped.
    """

    def now(self) -> datetime:
        return datetime.now(UTC)

    def transition_time(self) -> None:
        # The database's clock: one clock for every Worker's leases and history, read
        # once the statement holds what serialises it (ADR 0015).
        return None

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        # asyncio.sleep treats a delay <= 0 as "yield once", as the protocol wants.
        await asyncio.sleep(seconds)

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        # A negative delay means "already due": the loop runs it at its next iteration.
        return asyncio.get_running_loop().call_later(seconds, callback)


# Tasks that were cancelled and abandoned but have not finished yet. The event loop
# holds only weak references to tasks, so without this set a task stuck on a dead
# connection could be garbage-collected while pending ("Task was destroyed but it is
# pending!"), and its coroutine's clean-up would never run.
_abandoned: set[asyncio.Future[Any]] = set()


def abandon(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and let it finish on its own, without waiting for it.

    For work that may never honour cancellation: a call hung on a dead TCP connection,
    or a handler that ignores its cancellation. Nobody may wait for such a task, yet it
    must neither be garbage-collected while pending nor, when it does end with an
    exception, make asyncio log "Task exception was never retrieved". This keeps a
    strong reference until it is done and then retrieves (and drops) its exception.
    """
    task.cancel()
    _abandoned.add(task)
    task.add_done_callback(_forget)


def _forget(task: asyncio.Future[Any]) -> None:
    _abandoned.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved on purpose: an abandoned task's error has no reader


async def wait_done(clock: Clock, future: asyncio.Future[Any], seconds: float) -> bool:
    """Wait until ``future`` is done or ``seconds`` have passed on ``clock``.

    Returns whether ``future`` is done. Never cancels it, and never reads its result,
    so the caller decides what a late or failed future means.
    """
    wake: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def _wake(*_: object) -> None:
        # Both the timer and the future's completion call this; only the first counts.
        # The future's callback is left in place: it may still fire after the timer
        # did, and then finds ``wake`` done.
        if not wake.done():
            wake.set_result(None)

    future.add_done_callback(_wake)
    timer = clock.call_later(seconds, _wake)
    try:
        await wake
    finally:
        timer.cancel()
    return future.done()


async def wait_with_timeout(clock: Clock, awaitable: Awaitable[T], seconds: float) -> T:
    """Await ``awaitable`` for at most ``seconds`` on ``clock``; raise ``TimeoutError`` after.

    On timeout, or when the caller is cancelled, the inner work is cancelled and
    abandoned (see :func:`abandon`): this returns at once instead of waiting for the
    cancellation to be honoured, because a call hung on a dead connection may never
    honour it. A task passed in is the one cancelled, so pass a task only if that is
    what should happen to it.

    Unlike ``asyncio.wait_for`` the deadline is a timer of ``clock``, so a fake clock
    drives it. When the work finishes at the very moment the deadline falls due, its
    result wins.
    """
    task = asyncio.ensure_future(awaitable)
    try:
        done = await wait_done(clock, task, seconds)
    except asyncio.CancelledError:
        abandon(task)
        raise
    if not done:
        abandon(task)
        raise TimeoutError
    return task.result()
