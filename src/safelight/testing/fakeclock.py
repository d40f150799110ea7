"""A clock that moves only when a test moves it.

:class:`FakeClock` implements :class:`safelight.core.clock.Clock`. Its time stands
still until the test calls :meth:`FakeClock.advance`, which fires exactly the timers
and sleepers that fall due, in deadline order, and lets the event loop run after each
one, so the tasks it wakes get to react before the next deadline. No test has to sleep
for real to reach a deadline, and a deadline can be checked to the millisecond: not
fired at 29.999 s, fired at 30 s.

:meth:`FakeClock.jump` moves time without firing anything: a process frozen by SIGSTOP
or a long GC pause, whose event loop has not run yet although its monotonic clock has
moved on. The next :meth:`FakeClock.advance` (``advance(0)`` will do) fires what is due.

Time is kept in whole nanoseconds, so ``advance(29.999)`` then ``advance(0.001)`` lands
exactly on 30 s, with no floating-point drift.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from functools import partial

_NS = 1_000_000_000
_DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
# Loop iterations that settle() yields. Each lets every ready task take one step; a
# chain of wake-ups (a timer wakes a task that cancels another whose clean-up sets an
# event ...) needs one per link. Far more than any chain in this code base.
_SETTLE_ROUNDS = 100
# Timers that may fire at one instant before advance() decides the code under test is
# in a busy loop: a timer that keeps re-arming itself already due would otherwise hang
# the test forever, since time never moves on.
_MAX_FIRINGS_AT_ONCE = 200


class FakeTimer:
    """One pending timer or sleeper of a :class:`FakeClock`."""

    __slots__ = ("_clock", "callback", "deadline")

    def __init__(self, clock: FakeClock, deadline: int, callback: Callable[[], object]) -> None:
        self._clock = clock
        self.deadline = deadline  # nanoseconds since the clock's start
        self.callback = callback

    def cancel(self) -> None:
        """Remove the timer; a no-op once it has fired or been cancelled."""
        self._clock._discard(self)


class FakeClock:
    """A :class:`~safelight.core.clock.Clock` for tests; see the module docstring.

    ``start`` is the wall time :meth:`now` returns before the first advance, and
    ``monotonic_start`` what :meth:`monotonic` returns. Both move together.
    """

    def __init__(self, start: datetime = _DEFAULT_START, monotonic_start: float = 1000.0) -> None:
        if start.tzinfo is None:
            raise ValueError("start must be timezone-aware")
        self._start = start
        self._monotonic_start = monotonic_start
        self._ns = 0
        # In the order they were armed: among timers with one deadline the first armed
        # fires first, as on the asyncio event loop.
        self._timers: list[FakeTimer] = []

    # --- the Clock protocol ----------------------------------------------------------

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._ns / _NS)

    def transition_time(self) -> datetime:
        # The store records transitions at the fake time, so a test sets every lease
        # and history time to the nanosecond.
        return self.now()

    def monotonic(self) -> float:
        return self._monotonic_start + self._ns / _NS

    def call_later(self, seconds: float, callback: Callable[[], object]) -> FakeTimer:
        # A negative delay gives a deadline in the past: due at the next advance, and
        # ahead of timers due later, as asyncio orders them.
        timer = FakeTimer(self, self._ns + round(seconds * _NS), callback)
        self._timers.append(timer)
        return timer

    async def sleep(self, seconds: float) -> None:
        """Wait until the clock has been advanced to ``seconds`` from now.

        Even ``sleep(0)`` waits for the next :meth:`advance`. Cancelling the sleeper
        removes its timer.
        """
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        timer = self.call_later(seconds, partial(waiter.set_result, None))
        try:
            await waiter
        finally:
            timer.cancel()

    # --- for tests -------------------------------------------------------------------

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing every timer that falls due on the way.

        Timers fire one at a time in deadline order, with the clock set to each one's
        deadline while it fires (never back before the present, which a :meth:`jump`
        may have put past it). After each, the event loop runs until it settles, so a
        timer armed by a woken task fires in this same advance if it falls due in time.
        Raises ``RuntimeError`` if timers keep falling due at one instant (a busy loop).
        """
        if seconds < 0:
            raise ValueError(f"cannot advance by {seconds} s: time does not go back")
        target = self._ns + round(seconds * _NS)
        await self.settle()
        fired_at_this_instant = 0
        while due := [timer for timer in self._timers if timer.deadline <= target]:
            timer = min(due, key=_deadline)
            self._timers.remove(timer)
            if timer.deadline > self._ns:
                self._ns = timer.deadline
                fired_at_this_instant = 0
            fired_at_this_instant += 1
            if fired_at_this_instant > _MAX_FIRINGS_AT_ONCE:
                raise RuntimeError(
                    f"more than {_MAX_FIRINGS_AT_ONCE} timers fell due at one instant: "
                    "something keeps arming timers that are already due"
                )
            timer.callback()
            await self.settle()
        self._ns = max(self._ns, target)

    def jump(self, seconds: float) -> None:
        """Move time forward by ``seconds`` without firing anything, like a frozen process."""
        if seconds < 0:
            raise ValueError(f"cannot jump by {seconds} s: time does not go back")
        self._ns += round(seconds * _NS)

    async def settle(self) -> None:
        """Let every task that can run, run, until all are parked again (bounded).

        It yields to the event loop a fixed number of times; it never moves the clock.
        """
        for _ in range(_SETTLE_ROUNDS):
            await _yield_to_loop()

    async def wait_for_timers(self, count: int) -> None:
        """Let the loop run until at least ``count`` timers or sleepers are pending.

        For a test that must know tasks are parked on the clock before it advances.
        Raises ``AssertionError`` if they do not appear within the settle bound.
        """
        for _ in range(_SETTLE_ROUNDS):
            if len(self._timers) >= count:
                return
            await _yield_to_loop()
        raise AssertionError(f"expected {count} pending timers, found {len(self._timers)}")

    def deadlines(self) -> list[float]:
        """The monotonic deadlines of the pending timers and sleepers, earliest first."""
        return sorted(self._monotonic_start + timer.deadline / _NS for timer in self._timers)

    def _discard(self, timer: FakeTimer) -> None:
        if timer in self._timers:
            self._timers.remove(timer)


def _deadline(timer: FakeTimer) -> int:
    return timer.deadline


@types.coroutine
def _yield_to_loop() -> Generator[None, None, None]:
    """Give the event loop one iteration, as ``asyncio.sleep(0)`` does (with this same
    bare yield), without a delay argument that could be anything but zero."""
    yield
