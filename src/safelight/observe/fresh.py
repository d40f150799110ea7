"""A value made again at most once per interval, by one run at a time, however many
ask for it: what the metrics port answers its scrapes and probes from."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from safelight.core.clock import Clock

__all__ = ["Fresh"]

T = TypeVar("T")


class Fresh(Generic[T]):
    """The last value ``make`` gave, while it is younger than ``interval_seconds`` (from
    the end of its run); else a new run, which every caller meanwhile shares. A run that
    raises is not kept: each of its callers gets the error, and the next call runs again.

    A caller that stops waiting (cancelled) leaves the run going for the others; only
    :meth:`cancel` stops it.
    """

    def __init__(self, clock: Clock, interval_seconds: float, make: Callable[[], Awaitable[T]]):
        self._clock = clock
        self._interval_seconds = interval_seconds
        self._make = make
        self._made: tuple[float, T] | None = None
        self._running: asyncio.Future[T] | None = None
        self.runs = 0
        """How many runs have started: one per interval at most, however many callers."""

    async def get(self) -> T:
        if self._running is None:
            made = self._made
            if made is not None and self._clock.monotonic() - made[0] < self._interval_seconds:
                return made[1]
            self.runs += 1
            self._running = asyncio.ensure_future(self._run())
        return await asyncio.shield(self._running)

    async def _run(self) -> T:
        try:
            value = await self._make()
        finally:
            self._running = None
        self._made = (self._clock.monotonic(), value)
        return value

    def cancel(self) -> None:
        """Stop the run under way, if any (its callers get ``CancelledError``)."""
        if self._running is not None:
            self._running.cancel()
