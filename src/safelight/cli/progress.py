"""What ``safelight run`` shows while it works.

On a terminal: a live display (rich) with a bar per running item, files found and done,
hashed, ingested, proxies made, errors, the rate and an estimate of the time left. Not a
terminal (a log file, CI, a pipe): a plain line every second or so, never one per file.
With ``--json`` and no terminal on stderr: nothing, so stdout holds only the summary.

Progress arrives as the crawl's cumulative counters (``total``: files the walk found,
known once it ends; ``found``: how many of those have been dealt with so far). Each
view keeps only the latest counters of each item, so a burst of reports costs nothing.
The work a crawl queues after it (the place fill, the faces) reports counters of its
own, shown as they are named ("photos 20 · faces 3"), never as a crawl's files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, Any, Protocol
from uuid import UUID

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
)
from rich.text import Text

from safelight.core.clock import Clock
from safelight.handlers.crawl import CRAWL
from safelight.handlers.crawl.result import CrawlCounts
from safelight.terminal import first_line, printable
from safelight.words import plural

PLAIN_LINE_EVERY_SECONDS = 1.0
ESTIMATE_AFTER_FILES = 10
ESTIMATE_AFTER_SECONDS = 2.0
"""No estimate of the time left until this many files were done, over at least this
long, after the first: the first files wait for the walk and the decode processes'
start, and a rate from them once said "about 6m54s left" of a crawl of 21 s."""


class TimeLeft:
    """The time a crawl has left, from the rate of files done since its first was done
    (not since it started), or None while that rate says too little yet."""

    def __init__(self) -> None:
        self._first: tuple[float, int] | None = None

    def seconds(self, now: float, done: int, total: int) -> float | None:
        if done <= 0:
            return None
        if self._first is None:
            self._first = (now, done)
            return None
        since, done_then = self._first
        files, elapsed = done - done_then, now - since
        if files < ESTIMATE_AFTER_FILES or elapsed < ESTIMATE_AFTER_SECONDS or total <= done:
            return None
        return (total - done) * elapsed / files


class Finished(Protocol):
    """What the views need of ``safelight.app.FinishedItem``."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def outcome(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def storage_config_id(self) -> UUID | None: ...


class Started(Protocol):
    """What the views need of a work item."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def storage_config_id(self) -> UUID | None: ...


class ProgressView(Protocol):
    def __enter__(self) -> ProgressView: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...
    def on_progress(self, item: Started, counters: Mapping[str, Any]) -> None: ...
    def on_finished(self, item: Finished) -> None: ...


def is_crawl(item: Started) -> bool:
    return item.kind == CRAWL.name


def own_counters(counters: Mapping[str, Any]) -> str:
    """Another kind's counters, as it names them, in its order: ``photos 20 · faces 3``."""
    return " · ".join(
        f"{name.replace('_', ' ')} {value}"
        for name, value in counters.items()
        if isinstance(value, int) and not isinstance(value, bool)
    )


def detail(counters: Mapping[str, Any]) -> str:
    """A crawl's counters shown besides the bar, in this order."""
    c = CrawlCounts.from_json(counters)
    return (
        f"{c.hashed} hashed · {c.ingested} new · {c.moved} moved · {c.proxies} proxies · "
        f"{plural(c.errors, 'error')}"
    )


def finished_line(item: Finished, label: str) -> str:
    """``crawl photos: failed (its error's first line)``, escaped for the terminal."""
    line = f"{label}: {item.outcome}"
    if item.error:
        line += f" ({first_line(item.error)})"
    return printable(line)


@dataclass
class _Track:
    label: str
    started: float
    crawl: bool = True
    counters: Mapping[str, Any] = field(default_factory=dict)
    left: TimeLeft = field(default_factory=TimeLeft)


class PlainProgress:
    """A line per running item every ``interval`` seconds, and one when an item ends."""

    def __init__(
        self,
        out: IO[str],
        clock: Clock,
        label: Callable[[Started], str],
        *,
        interval: float = PLAIN_LINE_EVERY_SECONDS,
    ) -> None:
        self._out = out
        self._clock = clock
        self._label = label
        self._interval = interval
        self._tracks: dict[int, _Track] = {}
        self._last_line = float("-inf")
        self._lock = threading.Lock()

    def __enter__(self) -> PlainProgress:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def on_progress(self, item: Started, counters: Mapping[str, Any]) -> None:
        now = self._clock.monotonic()
        with self._lock:
            track = self._tracks.get(item.id)
            if track is None:
                track = self._tracks[item.id] = _Track(
                    printable(self._label(item)), now, is_crawl(item)
                )
            track.counters = dict(counters)
            if now - self._last_line < self._interval:
                return
            self._last_line = now
            self._write(self.line(track, now))

    def on_finished(self, item: Finished) -> None:
        with self._lock:
            track = self._tracks.pop(item.id, None)
            label = track.label if track else self._label(item)
            self._write(finished_line(item, label))

    def _write(self, line: str) -> None:
        self._out.write(line + "\n")
        self._out.flush()

    @staticmethod
    def line(track: _Track, now: float) -> str:
        if not track.crawl:
            return " · ".join(filter(None, [track.label, own_counters(track.counters)]))
        counts = CrawlCounts.from_json(track.counters)
        total, done = counts.total, counts.found
        parts = [track.label]
        if total:
            parts.append(f"{done}/{total} files ({100 * done // total}%)")
        else:
            parts.append("looking for files")
        parts.append(detail(track.counters))
        elapsed = now - track.started
        if done and elapsed > 0:
            rate = done / elapsed
            parts.append(f"{rate:.1f} files/s")
        left = track.left.seconds(now, done, total)
        if left is not None:
            parts.append(f"about {_duration(left)} left")
        return " · ".join(parts)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.1f} files/s", style="progress.data.speed")


class _TimeLeftColumn(ProgressColumn):
    """The time left as ``TimeLeft`` says it (rich's own guesses from the first files)."""

    def render(self, task: Task) -> Text:
        left = task.fields.get("left")
        return Text(
            "" if left is None else f"about {_duration(left)} left", style="progress.remaining"
        )


class _TwoLineProgress(Progress):
    """Each task on two lines: the bar, count, rate and time left; under it the counters
    (one line of everything would not fit an 80-column terminal)."""

    def get_renderables(self) -> Iterable[RenderableType]:
        for task in self.tasks:
            if task.visible:
                yield self.make_tasks_table([task])
                yield Text("  " + str(task.fields.get("detail", "")), style="dim")


class LiveProgress:
    """A rich live display: one bar per running item, finished items printed above it."""

    def __init__(self, console: Console, clock: Clock, label: Callable[[Started], str]) -> None:
        self._label = label
        self._progress = _TwoLineProgress(
            SpinnerColumn(),
            # Not markup: the description holds a folder's name, brackets and all.
            TextColumn("{task.description}", style="bold", markup=False),
            BarColumn(bar_width=24),
            MofNCompleteColumn(),
            _RateColumn(),
            _TimeLeftColumn(),
            console=console,
            get_time=clock.monotonic,
            transient=True,
        )
        self._tasks: dict[int, TaskID] = {}
        self._left: dict[int, TimeLeft] = {}
        self._clock = clock

    def __enter__(self) -> LiveProgress:
        self._progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._progress.stop()

    def on_progress(self, item: Started, counters: Mapping[str, Any]) -> None:
        task = self._tasks.get(item.id)
        if not is_crawl(item):
            if task is None:
                task = self._tasks[item.id] = self._progress.add_task(
                    printable(self._label(item)), total=None, detail=""
                )
            self._progress.update(task, detail=own_counters(counters))
            return
        counts = CrawlCounts.from_json(counters)
        total = counts.total or None
        if task is None:
            task = self._tasks[item.id] = self._progress.add_task(
                printable(self._label(item)), total=total, detail=""
            )
        left = self._left.setdefault(item.id, TimeLeft())
        self._progress.update(
            task,
            total=total,
            completed=counts.found,
            detail=detail(counters),
            left=left.seconds(self._clock.monotonic(), counts.found, counts.total),
        )

    def on_finished(self, item: Finished) -> None:
        task = self._tasks.pop(item.id, None)
        self._left.pop(item.id, None)
        label = self._label(item)
        if task is not None:
            self._progress.remove_task(task)
            # The live display re-draws its last frame under a print; draw one without
            # the finished task first, or it would linger until the next refresh.
            self._progress.refresh()
        self._progress.console.print(Text(finished_line(item, label)), highlight=False)


class NoProgress:
    def __enter__(self) -> NoProgress:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def on_progress(self, item: Started, counters: Mapping[str, Any]) -> None:
        return None

    def on_finished(self, item: Finished) -> None:
        return None


def choose_view(
    *,
    as_json: bool,
    stdout: IO[str],
    stderr: IO[str],
    clock: Clock,
    label: Callable[[Started], str],
) -> ProgressView:
    """Live on a terminal; plain lines on a non-terminal stdout; with ``--json`` only a
    live display on a terminal stderr (stdout is the summary's alone)."""
    if as_json:
        if stderr.isatty():
            return LiveProgress(Console(file=stderr), clock, label)
        return NoProgress()
    if stdout.isatty():
        return LiveProgress(Console(file=stdout), clock, label)
    return PlainProgress(stdout, clock, label)
