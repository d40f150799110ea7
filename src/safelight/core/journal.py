"""The side-effect journal: a line before and after every file side effect of an attempt.

Off unless ``SAFELIGHT_SIDE_EFFECT_LOG`` (the ``side_effect_log`` setting) names a file.
The fault-injection suite turns it on in every Worker process and reads all the files
afterwards to prove that no two attempts of one storage config ever had side effects
at overlapping times (ADR 0008). Each line is one JSON object, appended with
``O_APPEND`` and fsynced before the side effect proceeds, so a Worker killed mid-step
leaves at worst a "before" with no "after", which the checker treats as still open.

Times are ``time.monotonic_ns()``-comparable across processes of one machine (Linux
``CLOCK_MONOTONIC`` is system-wide); they come from the injected clock.

Every line also carries ``realtime_ns``, ``time.time_ns()`` read just before its ``t``:
the real clock at that moment, on which the database stamps its leases. A checker
places each effect on that clock through its own lines, never through one offset taken
at the start of a run, which a step of the real clock in between would make wrong.

The "after" line of an effect that succeeded also carries the kernel's own time of it:
``folder_ctime_ns``, the change time of the folder the effect changed an entry of, read
right after the syscall (see :func:`_kernel_time`). With that line's ``realtime_ns`` a
checker can place the effect on the journal's clock, and tell an effect that ran before
its process was frozen from one that ran on waking, though both intervals span the
freeze.

The current attempt travels in a context variable set around the handler, so library
code deep in a thread (``asyncio.to_thread`` copies the context) reports its effects
without every function taking one more parameter. The scope names the attempt by its
ids (storage config, work item, attempt number), the fields every line carries, so the
journal knows nothing of the engine's work items.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

from safelight.core.clock import Clock


class Journal:
    """Appends JSON lines to one file; safe to share between threads of a process."""

    def __init__(self, path: Path, clock: Clock) -> None:
        self._path = path
        self._clock = clock
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def write(self, entry: dict[str, object]) -> None:
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)

    def stamp(self) -> float:
        return self._clock.monotonic()

    def close(self) -> None:
        with self._lock:
            os.close(self._fd)


@dataclass(frozen=True, slots=True)
class _Scope:
    journal: Journal
    config_id: UUID | None
    item_id: int
    attempt: int


_current: ContextVar[_Scope | None] = ContextVar("safelight_attempt", default=None)


@contextmanager
def attempt_scope(
    journal: Journal | None, *, config_id: UUID | None, item_id: int, attempt: int
) -> Iterator[None]:
    """Route the side effects reported inside this block to ``journal``, as those of
    attempt ``attempt`` of work item ``item_id`` (of storage config ``config_id``)."""
    scope = None if journal is None else _Scope(journal, config_id, item_id, attempt)
    token = _current.set(scope)
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def side_effect(
    action: str, target: Path | str, ensure_alive: Callable[[], None] | None = None
) -> Iterator[None]:
    """Report a file side effect around the block (a no-op when no journal is set).

    ``ensure_alive`` is checked right after the "before" line is durable, and the block
    runs only if it passes: a process frozen while it wrote that line (its fsync can take
    long on a busy disk, or SIGSTOP can land there) wakes past its deadline and changes
    nothing. The line that then closes the interval says ``"refused": true``.
    """
    current = _current.get()
    if current is None:
        if ensure_alive is not None:
            ensure_alive()
        yield
        return
    base: dict[str, object] = {
        "pid": os.getpid(),
        "config": None if current.config_id is None else str(current.config_id),
        "item": current.item_id,
        "attempt": current.attempt,
        "action": action,
        "target": str(target),
    }
    journal = current.journal
    journal.write({**base, "phase": "before", **_stamps(journal)})
    if ensure_alive is not None:
        try:
            ensure_alive()
        except BaseException:
            journal.write(
                {**base, "phase": "after", "ok": False, "refused": True, **_stamps(journal)}
            )
            raise
    ok = False
    kernel: dict[str, object] = {}
    try:
        yield
        ok = True
        kernel = _kernel_time(target)
    finally:
        # Written also when the effect failed: the interval ends either way.
        journal.write({**base, "phase": "after", "ok": ok, **kernel, **_stamps(journal)})


def _stamps(journal: Journal) -> dict[str, object]:
    """A line's times: ``realtime_ns`` read first, then ``t``, both on the same side of
    the syscall. Mapped through them, a "before" line's moment is its realtime (before
    the syscall) and an "after" line's its realtime (after it); a delay between the two
    readings only moves the kernel's stamp, placed on ``t`` (see :func:`_kernel_time`),
    later. The real clock, not the injected one: it is compared with the kernel's ctime
    and with the database's lease times."""
    realtime_ns = time.time_ns()  # noqa: TID251
    return {"realtime_ns": realtime_ns, "t": journal.stamp()}


def _kernel_time(target: Path | str) -> dict[str, object]:
    """The kernel's time of an effect on ``target`` that has just succeeded, as an upper
    bound: ``{"folder_ctime_ns": ...}``, or nothing if it cannot be read.

    Every journalled effect adds, replaces or removes an entry of ``target``'s folder:
    "write" renames a finished file to ``target``, "mkdir" makes ``target`` (and any
    missing folder above it, each an entry of the folder above), "delete" unlinks
    ``target``, "rmdir" removes it. Each of those syscalls sets the
    folder's mtime and ctime to the kernel's time of the change, and any later change by
    anyone only moves them on. The ctime, unlike the mtime, cannot be set back by
    ``utime``, so read here, after the syscall, it is at or after the change - except
    that the file system stamps with the coarse realtime clock, up to one clock tick
    (1-10 ms) behind the real one, so a reader must allow that margin.

    To place it on the journal's clock the "after" line carries ``realtime_ns``, read
    just before its ``t``: the effect was at most ``(realtime_ns - folder_ctime_ns)``
    before ``t`` (plus the tick). Both clocks are system-wide and run at the same rate
    (NTP slews both alike); only a step of the realtime clock between the syscall and
    the line would skew this, and a delay between reading the two (a freeze) only makes
    the effect look later. This also holds with a fake clock: the effect is placed that
    long before the line's fake ``t``.
    """
    try:
        return {"folder_ctime_ns": os.stat(Path(target).parent).st_ctime_ns}
    except OSError:
        return {}
