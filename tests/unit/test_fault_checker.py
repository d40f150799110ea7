"""The fault suite's checker: an effect whose interval spans a freeze of its process is
ended at the kernel's time of it when that is known and proves it earlier, never
otherwise; the user-level invariants are checked with no tolerance, and a stale
attempt's effect of the residual window is reported, not failed, only when it cannot
touch a file a live row names (tests/faults/checker.py, docs/reliability.md)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from safelight.library.files.hashing import CONTENT_HASH_HEX_LENGTH
from tests.faults.checker import (
    Explained,
    Window,
    check_effects_within_lease,
    check_proxies,
    check_proxy_names,
    check_proxy_rows,
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
        real_at_start=0.0,  # the journal's clock is the real one here
        real_at_end=0.0,
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
        {**base, "phase": "before", "realtime_ns": 998_500_000_000, "t": 10.0},
        # The folder was stamped 2.5 s of realtime before the line's time was read.
        {
            **base,
            "phase": "after",
            "ok": True,
            "folder_ctime_ns": 1_000_000_000_000,
            "realtime_ns": 1_002_500_000_000,
            "t": 14.0,
        },
        {**base, "target": "y", "phase": "before", "realtime_ns": 1_003_500_000_000, "t": 15.0},
        {
            **base,
            "target": "y",
            "phase": "after",
            "ok": True,
            "realtime_ns": 1_003_600_000_000,
            "t": 15.1,
        },
    ]
    first, second = effects_of(lines, {})
    assert first.kernel == pytest.approx(11.5)
    assert (first.start, first.end) == (10.0, 14.0)
    assert second.kernel is None


# --- the real clock, read at each effect --------------------------------------------------

LINE = {"pid": 1, "config": "c1", "action": "delete"}


def _lines_of(
    item: int, attempt: int, target: str, times: list[tuple[float, float]]
) -> list[dict[str, object]]:
    """An effect's journal lines: ``times`` holds each line's (journal time, real time)."""
    (t0, real0), *rest = times
    owner = {**LINE, "item": item, "attempt": attempt, "target": target}
    lines: list[dict[str, object]] = [
        {**owner, "phase": "before", "t": t0, "realtime_ns": round(real0 * 1e9)}
    ]
    for t, real in rest:
        lines.append(
            {**owner, "phase": "after", "ok": True, "t": t, "realtime_ns": round(real * 1e9)}
        )
    return lines


def test_each_effect_is_placed_on_the_real_clock_through_its_own_lines() -> None:
    """The real clock steps 0.3 s forward at journal time 12 (a machine's clock set on
    waking): every line after it reads the step, and so do the database's lease stamps.
    Placed through one offset taken at the start, item 2's effect, 0.1 s after its claim,
    would fall before it, and item 3's, 0.1 s past its lease, inside it."""
    lines = [
        *_lines_of(1, 1, "a", [(10.0, 1010.0), (10.5, 1010.5)]),
        *_lines_of(2, 1, "b", [(15.0, 1015.3), (15.001, 1015.301)]),
        *_lines_of(3, 1, "c", [(15.5, 1015.8), (15.8, 1016.1)]),
    ]
    first, second, third = sorted(effects_of(lines, {}), key=lambda e: e.start)
    assert (first.wall_start, first.wall_end) == pytest.approx((1010.0, 1010.5))
    assert (second.wall_start, second.wall_end) == pytest.approx((1015.3, 1015.301))
    assert third.wall_end == pytest.approx(1016.1)
    leases: Any = Leases([(1, 1, 1009.9, 1012.0), (2, 1, 1015.2, 1017.2), (3, 1, 1014.0, 1016.0)])
    (late,) = check_effects_within_lease(leases, [first, second, third])
    assert "item 3 attempt 1" in late.detail
    assert "expired 0.100 s before it ended" in late.detail


def test_an_effect_cut_off_by_its_process_s_death_ends_there_on_its_own_clocks() -> None:
    lines = _lines_of(1, 1, "a", [(10.0, 1010.3)])
    (open_effect,) = effects_of(lines, {1: 10.4})
    assert open_effect.ok is None
    assert open_effect.wall_end == pytest.approx(1010.7)
    (forever,) = effects_of(lines, {})
    assert forever.wall_end == math.inf


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
    assert check_effects_within_lease(leases, [frozen_effect(kernel=10.01)], FREEZES) == []
    (violation,) = check_effects_within_lease(leases, [frozen_effect(kernel=None)], FREEZES)
    assert violation.check == "stale_effects"
    assert "spans its process's freeze" in violation.detail
    # Stamped after the lease ran out (a syscall that hung into the freeze): reported.
    assert len(check_effects_within_lease(leases, [frozen_effect(kernel=11.5)], FREEZES)) == 1


# --- the strict invariants, and the residual window's harmless effects -----------------

ROOT = Path("/proxies")
CONFIG = "0b6f2a5e-8c1d-4e7a-9f3b-2d4c6e8a0b1c"
HASH = "ab" + "0" * (CONTENT_HASH_HEX_LENGTH - 2)
FOLDER = f"{CONFIG}/ab/{HASH}"


def _effect(
    action: str, name: str, *, attempt: int, pid: int, start: float, end: float, **rest: Any
) -> Effect:
    """An effect of item 1 of config c1 on ``<its folder>/<name>``."""
    return Effect(
        pid=pid,
        config="c1",
        item=1,
        attempt=attempt,
        action=action,
        target=str(ROOT / FOLDER / name),
        start=start,
        end=end,
        ok=rest.pop("ok", True),
        real_at_start=0.0,
        real_at_end=0.0,
        **rest,
    )


def stale(action: str, name: str, start: float = 10.0, **rest: Any) -> Effect:
    """Attempt 1, whose process was frozen from 10.2 to 14.0: its interval spans it."""
    return _effect(action, name, attempt=1, pid=FROZEN_PID, start=start, end=14.001, **rest)


def newer(action: str, name: str, at: float = 12.5) -> Effect:
    """Attempt 2, on another Worker, claimed once attempt 1's lease ran out (at 11.0)."""
    return _effect(action, name, attempt=2, pid=OTHER_PID, start=at, end=at + 0.001)


# Attempt 1's lease ran from 9.0 to 11.0; attempt 2's from 11.5 to 20.0.
LEASES = {(1, 1): [(9.0, 11.0)], (1, 2): [(11.5, 20.0)]}
LIVE_NAME = "thumbnail.1-2.jpg"
LIVE = {f"{FOLDER}/{LIVE_NAME}": 7}


def window(live: dict[str, int] | None = None) -> Window:
    return Window(LEASES, LIVE if live is None else live, ROOT)


def test_a_late_write_under_its_own_name_is_reported_not_a_violation() -> None:
    effects = [stale("write", "full_preview.1-1.jpg"), newer("write", LIVE_NAME)]
    explained: list[Explained] = []
    assert check_side_effects(effects, FREEZES, window(), explained) == []
    (overlap,) = explained
    assert overlap.check == "side_effects"
    assert "only its own attempt writes" in overlap.why
    assert check_proxy_names(effects, LIVE, ROOT) == []
    # Without the window the overlap is what it always was: a violation.
    assert len(check_side_effects(effects, FREEZES)) == 1


def test_a_late_write_under_another_attempt_s_name_is_a_violation() -> None:
    """A write to a name the newer attempt's row names: a replacement, never explained."""
    effects = [stale("write", LIVE_NAME), newer("write", LIVE_NAME, at=11.6)]
    explained: list[Explained] = []
    (overlap,) = check_side_effects(effects, FREEZES, window(), explained)
    assert overlap.check == "side_effects"
    assert explained == []
    (named,) = check_proxy_names(effects, LIVE, ROOT)
    assert named.check == "proxy_names"
    assert "carries attempt 1-2, not its own 1-1" in named.detail
    # The newer attempt's write, inside its lease, is nothing the window explains.
    assert window().explain(effects[1]) is None


def test_a_write_to_a_name_with_no_attempt_is_a_violation() -> None:
    (named,) = check_proxy_names([newer("write", "thumbnail.jpg")], {}, ROOT)
    assert "carries no attempt" in named.detail


def test_an_effect_begun_after_its_lease_ran_out_is_never_explained() -> None:
    """Its check came after the lease: the self-stop did not stop it."""
    late = stale("write", "full_preview.1-1.jpg", start=11.2)
    assert window().explain(late) is None
    explained: list[Explained] = []
    assert len(check_side_effects([late, newer("write", LIVE_NAME)], FREEZES, window(), explained))
    assert explained == []


def test_a_late_delete_of_a_file_a_live_row_names_is_a_violation() -> None:
    effects = [stale("delete", LIVE_NAME), newer("write", LIVE_NAME, at=10.5)]
    (named,) = check_proxy_names(effects, LIVE, ROOT)
    assert "the proxy of live asset 7" in named.detail
    assert window().explain(effects[0]) is None
    # Not even once the delete is known to have failed is it explained by the name:
    # it changed nothing, and proxy_names lets it be, but only because it failed.
    failed = stale("delete", LIVE_NAME, ok=False)
    assert check_proxy_names([failed], LIVE, ROOT) == []
    # A delete whose process died inside it may have run: a violation.
    died = stale("delete", LIVE_NAME, ok=None)
    assert len(check_proxy_names([died], LIVE, ROOT)) == 1


def test_a_late_delete_of_a_dead_asset_s_file_is_reported_outside_its_lease() -> None:
    leases: Any = Leases([(1, 1, 9.0, 11.0)])
    dead = stale("delete", "thumbnail.1-1.jpg")
    explained: list[Explained] = []
    assert check_effects_within_lease(leases, [dead], FREEZES, window(), explained) == []
    (reported,) = explained
    assert reported.check == "stale_effects"
    assert "lease had expired" in reported.detail
    assert "no live row names" in reported.why
    # The same delete, begun after the lease: the violation it always was.
    after = stale("delete", "thumbnail.1-1.jpg", start=11.5)
    assert len(check_effects_within_lease(leases, [after], FREEZES, window(), [])) == 1


def test_late_folder_effects_are_reported_with_why() -> None:
    for action, why in (("rmdir", "only an empty folder"), ("mkdir", "an empty folder")):
        explanation = window().explain(stale(action, ""))
        assert explanation is not None and why in explanation


def test_an_explained_overlap_does_not_hide_another_of_the_same_two_attempts() -> None:
    explained: list[Explained] = []
    effects = [
        stale("write", "full_preview.1-1.jpg"),
        newer("write", LIVE_NAME),
        stale("delete", LIVE_NAME, start=10.1),
    ]
    (violation,) = check_side_effects(effects, FREEZES, window(), explained)
    assert f"delete {ROOT / FOLDER / LIVE_NAME}" in violation.detail
    assert len(explained) == 1


class Database:
    """Stands in for the connection: answers each query by a piece of its text."""

    def __init__(self, answers: dict[str, list[tuple[Any, ...]]]) -> None:
        self.answers = answers

    def execute(self, query: str) -> Any:
        (rows,) = [rows for key, rows in self.answers.items() if key in query]
        return _Rows(rows)


class _Rows(list[tuple[Any, ...]]):
    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)


def _running(item: int, attempt: int, kind: str = "crawl") -> list[dict[str, Any]]:
    return [{"id": item, "attempt": attempt, "kind": kind}]


def proxy_rows(
    writes: list[tuple[str, list[dict[str, Any]]]], live: list[tuple[int, str, str]]
) -> Any:
    at = datetime(2026, 12, 1, tzinfo=UTC)
    return Database(
        {
            "faults_proxy_rows": [("INSERT", 7, CONFIG, path, at, run) for path, run in writes],
            "work_attempts": [(1, 1, CONFIG), (1, 2, CONFIG)],
            "NOT a.is_deleted": live,
        }
    )


def test_a_proxy_row_of_the_running_attempt_is_no_violation() -> None:
    path = f"{FOLDER}/{LIVE_NAME}"
    db = proxy_rows([(path, _running(1, 2))], [(7, CONFIG, path)])
    assert check_proxy_rows(db) == []


def test_a_proxy_row_written_by_an_attempt_that_had_lost_its_item_is_a_violation() -> None:
    """Attempt 1 of item 1 wrote its row while attempt 2 held the item: the fence failed."""
    path = f"{FOLDER}/thumbnail.1-1.jpg"
    (violation,) = check_proxy_rows(proxy_rows([(path, _running(1, 2))], []))
    assert violation.check == "proxy_rows"
    assert "written by attempt 1-1" in violation.detail
    (alone,) = check_proxy_rows(proxy_rows([(path, [])], []))
    assert "running items were []" in alone.detail


def test_a_live_row_that_names_no_crawl_s_file_is_a_violation() -> None:
    for name in ("thumbnail.jpg", "thumbnail.9-1.jpg"):
        (violation,) = check_proxy_rows(proxy_rows([], [(7, CONFIG, f"{FOLDER}/{name}")]))
        assert "not a file of a crawl attempt of its config" in violation.detail


def test_every_file_a_live_row_names_is_on_disk(tmp_path: Path) -> None:
    (tmp_path / FOLDER).mkdir(parents=True)
    (tmp_path / FOLDER / LIVE_NAME).write_bytes(b"jpeg")
    gone = f"{FOLDER}/full_preview.1-2.jpg"
    db: Any = Database(
        {"p.path IS NOT NULL": [(7, f"{FOLDER}/{LIVE_NAME}"), (7, gone)], "NOT EXISTS": []}
    )
    (violation,) = check_proxies(db, tmp_path)
    assert violation.detail == f"live asset 7: its proxy {gone} is not on disk"
