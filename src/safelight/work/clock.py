"""The one source of time for everything under ``src/``.

Every part that reads or waits on time takes a :class:`Clock`. Production uses
:class:`SystemClock`; tests use :class:`safelight.work.fakeclock.FakeClock`, which moves
only when the test advances it, so no test sleeps for real to wait for a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC. Goes into the database as ``now``."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; for deadlines inside one process."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback`` once ``seconds`` have passed on this clock."""
        ...


class SystemClock:
    """The real clock: UTC wall time, ``time.monotonic`` and the event loop's timers."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, seconds: float, callback: Callable[[], object]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, seconds), callback)
