"""Heavy hours: the window of the day in which heavy kinds may start (ADR 0060).

``SAFELIGHT_HEAVY_HOURS=01:00-07:00`` keeps the heavy kinds (a ``Kind`` row's
``heavy``: the crawl, and whatever makes proxies) to the night on a small machine.
Outside the window a Worker leaves them out of its claim; an attempt running when the
window ends is asked to wind down (``HandlerContext.winding_down``): it finishes the
files it has started, stops, and goes back to the queue until the next window starts,
counting neither a failure nor a stall (outcome ``Deferred``).

Times are the machine's local wall-clock time, read from the injected clock's
``now()``; a window whose end comes before its start wraps past midnight
(``22:00-06:00``). A window is half-open: it starts at its start and is over at its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta, tzinfo

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


def _at(text_hour: str, text_minute: str) -> time | None:
    hour, minute = int(text_hour), int(text_minute)
    if hour == 24 and minute == 0:
        return time.min  # "24:00": midnight, the end of the day
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


@dataclass(frozen=True, slots=True)
class HeavyHours:
    """A daily window, ``start`` to ``end`` in ``zone`` (None: the machine's local time)."""

    start: time
    end: time
    zone: tzinfo | None = None

    def __post_init__(self) -> None:
        if self.start == self.end:
            raise ValueError("a window that starts where it ends is empty")

    @classmethod
    def parse(cls, text: str, zone: tzinfo | None = None) -> HeavyHours:
        """``HH:MM-HH:MM`` (24-hour clock); ``ValueError`` with one line saying what is
        expected for anything else."""
        match = _WINDOW.match(text)
        start = end = None
        if match is not None:
            start, end = _at(*match.group(1, 2)), _at(*match.group(3, 4))
        if start is None or end is None:
            raise ValueError(
                f"must be a window of the day as HH:MM-HH:MM on a 24-hour clock, such as "
                f"01:00-07:00 (22:00-06:00 wraps past midnight), not {text!r}"
            )
        if start == end:
            raise ValueError(f"{text!r} starts where it ends; leave it unset for always")
        return cls(start, end, zone)

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def _local(self, at: datetime) -> datetime:
        return at.astimezone(self.zone)

    def _on(self, day: datetime, hour: time) -> datetime:
        """``hour`` on ``day``'s date, in the window's zone, aware."""
        naive = datetime.combine(day.date(), hour)
        return naive.astimezone() if self.zone is None else naive.replace(tzinfo=self.zone)

    def contains(self, at: datetime) -> bool:
        t = self._local(at).time()
        if self.start < self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end

    def _next(self, at: datetime, hour: time) -> datetime:
        """The first ``hour`` of the day strictly after ``at``."""
        local = self._local(at)
        candidate = self._on(local, hour)
        if candidate <= local:
            candidate = self._on(local + timedelta(days=1), hour)
        return candidate

    def next_start(self, at: datetime) -> datetime:
        """When the window next opens after ``at`` (inside it: the next day's)."""
        return self._next(at, self.start)

    def seconds_to_end(self, at: datetime) -> float | None:
        """Seconds until the window that holds ``at`` closes; None outside it."""
        if not self.contains(at):
            return None
        return (self._next(at, self.end) - at).total_seconds()

    def seconds_to_start(self, at: datetime) -> float:
        """Seconds until the window opens: 0 inside it."""
        if self.contains(at):
            return 0.0
        return (self.next_start(at) - at).total_seconds()


@dataclass(frozen=True, slots=True)
class HeavyWindow:
    """The heavy kinds and their window, as a Worker and its executor apply them."""

    hours: HeavyHours
    kinds: frozenset[str]

    def claimable(self, kinds: frozenset[str], at: datetime) -> frozenset[str]:
        """``kinds`` less the heavy ones while ``at`` is outside the window."""
        return kinds if self.hours.contains(at) else kinds - self.kinds

    def wind_down_in(self, kind: str, at: datetime) -> float | None:
        """Seconds until an attempt of ``kind`` started at ``at`` must wind down (0:
        at once, it is outside its window); None for a kind that is not heavy."""
        if kind not in self.kinds:
            return None
        left = self.hours.seconds_to_end(at)
        return 0.0 if left is None else left

    def waits_for(self, at: datetime) -> str:
        """``waits for heavy hours (01:00)``: what is shown of a heavy kind's queued item."""
        if self.hours.contains(at):
            return ""
        return f"waits for heavy hours ({self.hours.start:%H:%M})"
