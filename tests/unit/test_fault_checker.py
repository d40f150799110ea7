"""The fault suite's checker: an effect whose interval spans a freeze of its process is
ended at the kernel's time of it when that is known and proves it earlier, never
otherwise (tests/faults/checker.py, docs/reliability.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.faults.checker import (
    check_effects_within_lease,
    check_side_effects,
    clip_at_kernel_time,
)
from tests.faults.effects import KERNEL_CLOCK_MARGIN, Effect, effects_of

FROZEN_PID = 101
OTHER_PID = 202
# The frozen process's freeze: SIGSTOP at 10.2, SIGCONT at 14.0.
FREEZES = {FROZEN_PID: [(10.2, 14.0)]}


def _delete(pid: int, attempt: int, name: str, start: float, end: float, **rest: Any) -> Effect:
    """A successful delete of ``name`` by attempt ``attempt`` of item 1 of config c1."""
    return Effect(
        pid=pid,
        config="c1",
        item=1,
        attempt=attempt,
        action="delete",
        target=f"/proxies/c1/ab/{name}",
        start=start,
        end=end,
        ok=True,
        **rest,
    )


def frozen_effect(kernel: float | None) -> Effect:
    """Attempt 1 of item 1: its interval [10.0, 14.001] spans its process's freeze."""
    return _delete(FROZEN_PID, 1, "thumbnail.jpg", 10.0, 14.001, kernel=kernel)


def next_attempt(at: float) -> Effect:
    """Attempt 2 of item 1, on another Worker, during the freeze."""
    return _delete(OTHER_PID, 2, "full_preview.jpg", at, at + 0.001)


def test_an_effect_the_kernel_stamped_before_the_freeze_no_longer_overlaps() -> None:
    effects = [frozen_effect(kernel=10.01), next_attempt(12.5)]
    assert check_side_effects(effects, FREEZES) == []
    assert clip_at_kernel_time(effects[0], FREEZES).end == pytest.approx(10.01 + 0.05)


def test_an_effect_with_no_kernel_time_still_overlaps_and_says_it_spans_the_freeze() -> None:
    (violation,) = check_side_effects([frozen_effect(kernel=None), next_attempt(12.5)], FREEZES)
    assert violation.check == "side_effects"
    assert "its interval spans its process's freeze from 10.2000 to 14.0000" in violation.detail


def test_an_effect_the_kernel_stamped_as_its_process_woke_still_overlaps() -> None:
    """Frozen between its check and its syscall: the syscall ran after the SIGCONT."""
    effects = [frozen_effect(kernel=14.0005), next_attempt(12.5)]
    (violation,) = check_side_effects(effects, FREEZES)
    assert "spans its process's freeze" in violation.detail
    assert "kernel=14.0005" in violation.detail


def test_the_margin_is_kept_after_the_kernel_s_time() -> None:
    """A syscall running when the SIGSTOP came is placed at its stamp plus the margin:
    another attempt's effect within that margin still overlaps it."""
    stamped = 12.0
    inside = next_attempt(stamped + KERNEL_CLOCK_MARGIN - 0.001)
    outside = next_attempt(stamped + KERNEL_CLOCK_MARGIN + 0.001)
    assert len(check_side_effects([frozen_effect(kernel=stamped), inside], FREEZES)) == 1
    assert check_side_effects([frozen_effect(kernel=stamped), outside], FREEZES) == []


def test_a_kernel_time_before_the_effect_began_is_no_proof() -> None:
    """A folder stamped before the "before" line (by more than the margin) was not
    stamped by this effect: the interval stays as journalled."""
    effects = [frozen_effect(kernel=10.0 - KERNEL_CLOCK_MARGIN - 0.001), next_attempt(12.5)]
    assert len(check_side_effects(effects, FREEZES)) == 1


def test_without_a_freeze_of_its_process_the_interval_stays_as_journalled() -> None:
    effect = frozen_effect(kernel=10.01)
    assert clip_at_kernel_time(effect, {}) == effect
    assert clip_at_kernel_time(effect, {OTHER_PID: [(10.2, 14.0)]}) == effect
    assert len(check_side_effects([effect, next_attempt(12.5)], {})) == 1


def test_the_after_line_s_kernel_time_is_placed_on_the_journal_s_clock() -> None:
    base = {"pid": 1, "config": "c1", "item": 1, "attempt": 1, "action": "delete", "target": "x"}
    lines: list[dict[str, object]] = [
        {**base, "phase": "before", "t": 10.0},
        # The folder was stamped 2.5 s of realtime before the line's time was read.
        {
            **base,
            "phase": "after",
            "ok": True,
            "folder_ctime_ns": 1_000_000_000_000,
            "realtime_ns": 1_002_500_000_000,
            "t": 14.0,
        },
        {**base, "target": "y", "phase": "before", "t": 15.0},
        {**base, "target": "y", "phase": "after", "ok": True, "t": 15.1},
    ]
    first, second = effects_of(lines, {})
    assert first.kernel == pytest.approx(11.5)
    assert (first.start, first.end) == (10.0, 14.0)
    assert second.kernel is None


class Leases:
    """Stands in for the connection: the one query check_effects_within_lease makes."""

    def __init__(self, rows: list[tuple[int, int, float, float]]) -> None:
        self.rows = [
            (item, attempt, datetime.fromtimestamp(at, UTC), datetime.fromtimestamp(until, UTC))
            for item, attempt, at, until in rows
        ]

    def execute(self, query: str) -> list[tuple[Any, ...]]:
        assert "faults_leases" in query
        return self.rows


def test_the_lease_check_also_ends_a_frozen_effect_at_its_kernel_time() -> None:
    # Attempt 1's lease ran to 11.0; the freeze outlasted it.
    leases: Any = Leases([(1, 1, 9.0, 11.0)])
    assert check_effects_within_lease(leases, [frozen_effect(kernel=10.01)], 0.0, FREEZES) == []
    (violation,) = check_effects_within_lease(leases, [frozen_effect(kernel=None)], 0.0, FREEZES)
    assert violation.check == "stale_effects"
    assert "spans its process's freeze" in violation.detail
    # Stamped after the lease ran out (a syscall that hung into the freeze): reported.
    assert len(check_effects_within_lease(leases, [frozen_effect(kernel=11.5)], 0.0, FREEZES)) == 1
