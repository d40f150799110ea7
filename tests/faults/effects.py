"""Reading the side-effect journals of every Worker process into effect intervals, and
the first check: no two attempts of one storage config had side effects at once.

A journal line is written, fsynced, before and after each file side effect of an
attempt (``safelight.core.journal``). One effect's interval runs from its ``before`` to
its ``after``. A ``before`` with no ``after`` (the process was killed in the middle) is
open until the process was known dead; for a process still running at the end (it
should not be, the checker runs after every Worker stopped) it stays open for ever.

An ``after`` line that says ``"refused": true`` closes an effect that ``ensure_alive()``
refused inside its interval, before anything was touched: it had no side effect, so it
is left out. (No engine code writes it yet: see docs/reliability.md, bug 3.)

Every line carries ``realtime_ns``, the real clock read just before its ``t``: an
effect is placed on the real clock, the one the database stamps leases with, through
its own lines (``Effect.wall_start``, ``Effect.wall_end``). One offset between the two
clocks taken at the start of a run would not do: a step of the real clock during the
run (a machine's clock set on waking from a pause) moves every later effect by it.

The ``after`` line of an effect that succeeded may also carry the kernel's time of it
(``folder_ctime_ns`` with ``realtime_ns``, see ``safelight.core.journal._kernel_time``):
an upper bound of when the effect ran, give or take ``KERNEL_CLOCK_MARGIN``, kept as
``Effect.kernel`` on the journal's clock. The interval itself is left as journalled;
the checker decides when that bound may shorten it (``checker.clip_at_kernel_time``).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

KERNEL_CLOCK_MARGIN = 0.050
"""Seconds allowed between the kernel's stamp of an effect and the effect: a file
system stamps with the coarse realtime clock, up to one tick (1-10 ms) behind the real
one; the rest is slack."""


@dataclass(frozen=True, slots=True)
class Effect:
    pid: int
    config: str | None
    item: int
    attempt: int
    action: str
    target: str
    start: float
    end: float
    ok: bool | None
    """None: no ``after`` line (the process died in the middle)."""
    real_at_start: float
    """The real clock minus the journal's, read at the ``before`` line."""
    real_at_end: float
    """The same at the ``after`` line; with none, at the ``before`` line (a process's
    death is placed on the journal's clock)."""
    kernel: float | None = None
    """The kernel's time of the effect, on the journal's clock, if its ``after`` line
    has it: the effect ran before ``kernel + KERNEL_CLOCK_MARGIN``."""

    @property
    def owner(self) -> tuple[int, int]:
        return (self.item, self.attempt)

    @property
    def wall_start(self) -> float:
        """On the real clock (seconds), a time before the effect's syscall: its
        ``before`` line's."""
        return self.start + self.real_at_start

    @property
    def wall_end(self) -> float:
        """On the real clock, a time by which the effect was done: its ``end`` (its
        ``after`` line's, its process's death, or the kernel's time where the checker
        clipped it there) through the clocks read at its ``after`` line."""
        return self.end + self.real_at_end

    def describe(self) -> str:
        end = "open" if self.ok is None else f"{self.end:.4f}"
        kernel = "" if self.kernel is None else f" kernel={self.kernel:.4f}"
        return (
            f"pid {self.pid} item {self.item} attempt {self.attempt} {self.action} "
            f"{self.target} [{self.start:.4f}, {end}] ok={self.ok}{kernel}"
        )


@dataclass(frozen=True, slots=True)
class Overlap:
    config: str
    first: Effect
    second: Effect

    def describe(self) -> str:
        return (
            f"config {self.config}: two attempts had side effects at once:\n"
            f"  {self.first.describe()}\n  {self.second.describe()}"
        )


def read_lines(paths: Iterable[Path]) -> list[dict[str, object]]:
    lines: list[dict[str, object]] = []
    for path in paths:
        if not path.exists():
            continue
        for raw in path.read_text().splitlines():
            if raw.strip():
                lines.append(json.loads(raw))
    return lines


def effects_of(
    lines: Iterable[Mapping[str, object]], died_at: Mapping[int, float | None]
) -> list[Effect]:
    """Pair each ``before`` with its ``after``: same process, attempt, action and target,
    first in first out (one attempt may have several effects on several files at once,
    from its threads, but not two on one file)."""
    pending: dict[tuple[object, ...], list[Mapping[str, object]]] = defaultdict(list)
    effects: list[Effect] = []
    for line in sorted(lines, key=lambda entry: float(entry["t"])):  # type: ignore[arg-type]
        key = (line["pid"], line["item"], line["attempt"], line["action"], line["target"])
        if line["phase"] == "before":
            pending[key].append(line)
            continue
        assert pending[key], f"an 'after' with no 'before': {line}"
        before = pending[key].pop(0)
        if line.get("refused"):
            continue
        effect = _effect(before, float(line["t"]), bool(line["ok"]))  # type: ignore[arg-type]
        effects.append(replace(effect, real_at_end=real_minus_t(line), kernel=kernel_time(line)))
    for opened in pending.values():
        for before in opened:
            died = died_at.get(int(before["pid"]))  # type: ignore[call-overload]
            effects.append(_effect(before, math.inf if died is None else died, None))
    return effects


def real_minus_t(line: Mapping[str, object]) -> float:
    """The real clock minus the journal's at ``line``, in seconds."""
    real_ns, t = line["realtime_ns"], line["t"]
    assert isinstance(real_ns, int) and isinstance(t, (int, float)), line
    return real_ns / 1e9 - t


def kernel_time(after: Mapping[str, object]) -> float | None:
    """The kernel's time of an effect on its journal's clock, from its ``after`` line:
    ``realtime_ns - folder_ctime_ns`` before the line's ``t``. None if not recorded."""
    folder_ns, real_ns = after.get("folder_ctime_ns"), after.get("realtime_ns")
    if not isinstance(folder_ns, int) or not isinstance(real_ns, int):
        return None
    return float(after["t"]) - (real_ns - folder_ns) / 1e9  # type: ignore[arg-type]


def _effect(before: Mapping[str, object], end: float, ok: bool | None) -> Effect:
    config = before["config"]
    return Effect(
        pid=int(before["pid"]),  # type: ignore[call-overload]
        config=None if config is None else str(config),
        item=int(before["item"]),  # type: ignore[call-overload]
        attempt=int(before["attempt"]),  # type: ignore[call-overload]
        action=str(before["action"]),
        target=str(before["target"]),
        start=float(before["t"]),  # type: ignore[arg-type]
        end=end,
        ok=ok,
        real_at_start=real_minus_t(before),
        real_at_end=real_minus_t(before),
    )


def overlaps(effects: Iterable[Effect]) -> list[Overlap]:
    """Every pair of effects of one config, of different attempts, whose intervals
    overlap (touching ends count: the journal's clock is finer than any real gap).

    Per config, a sweep in start order keeps the effects still open; a new effect
    overlaps each of them that belongs to another attempt. Reported once per pair of
    attempts, so one long overlap does not drown the report.
    """
    by_config: dict[str, list[Effect]] = defaultdict(list)
    for effect in effects:
        if effect.config is not None:
            by_config[effect.config].append(effect)
    found: list[Overlap] = []
    for config, group in by_config.items():
        group.sort(key=lambda e: e.start)
        open_effects: list[Effect] = []
        reported: set[tuple[tuple[int, int], tuple[int, int]]] = set()
        for effect in group:
            open_effects = [e for e in open_effects if e.end >= effect.start]
            for other in open_effects:
                if other.owner == effect.owner:
                    continue
                pair = (min(other.owner, effect.owner), max(other.owner, effect.owner))
                if pair not in reported:
                    reported.add(pair)
                    found.append(Overlap(config, other, effect))
            open_effects.append(effect)
    return found
