"""The side-effect journal: lines before and after each effect, only inside an attempt."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import cast
from uuid import UUID

import pytest

from safelight.core.journal import Journal, attempt_scope, side_effect
from safelight.testing.fakeclock import FakeClock
from safelight.work.errors import AttemptStopped

CONFIG = UUID("00000000-0000-0000-0000-0000000000c1")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_effects_inside_an_attempt_are_journalled_before_and_after(
    tmp_path: Path,
) -> None:
    clock = FakeClock(monotonic_start=100.0)
    journal = Journal(tmp_path / "j" / "effects.jsonl", clock)
    with attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3):
        with side_effect("write", tmp_path / "a.jpg"):
            await clock.advance(2)
        # Library code in a thread still knows its attempt: to_thread copies the context.
        await asyncio.to_thread(_delete_in_thread, tmp_path / "b.jpg")
    journal.close()
    lines = _lines(tmp_path / "j" / "effects.jsonl")
    assert [(x["action"], x["phase"], x["t"]) for x in lines] == [
        ("write", "before", 100.0),
        ("write", "after", 102.0),
        ("delete", "before", 102.0),
        ("delete", "after", 102.0),
    ]
    assert all(x["config"] == str(CONFIG) and x["item"] == 7 and x["attempt"] == 3 for x in lines)
    assert lines[0]["target"] == str(tmp_path / "a.jpg")
    assert lines[1]["ok"] is True


def _delete_in_thread(path: Path) -> None:
    with side_effect("delete", path):
        pass


def test_a_failed_effect_still_closes_its_interval(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    with (
        attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3),
        pytest.raises(OSError),
        side_effect("delete", "x"),
    ):
        raise OSError("gone")
    journal.close()
    assert [(x["phase"], x.get("ok")) for x in _lines(tmp_path / "effects.jsonl")] == [
        ("before", None),
        ("after", False),
    ]


def test_outside_an_attempt_or_without_a_journal_nothing_is_written(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    with side_effect("write", "x"):
        pass
    with attempt_scope(None, config_id=CONFIG, item_id=7, attempt=3), side_effect("write", "y"):
        pass
    journal.close()
    assert (tmp_path / "effects.jsonl").read_text() == ""


def test_an_attempt_stopped_while_its_line_was_written_changes_nothing(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    touched: list[str] = []

    def stopped() -> None:
        raise AttemptStopped("self-stopped")

    with (
        attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3),
        pytest.raises(AttemptStopped),
        side_effect("delete", "x", stopped),
    ):
        touched.append("x")
    journal.close()
    assert touched == []
    lines = _lines(tmp_path / "effects.jsonl")
    assert [(x["phase"], x.get("ok"), x.get("refused")) for x in lines] == [
        ("before", None, None),
        ("after", False, True),
    ]


def test_without_a_journal_the_check_still_runs(tmp_path: Path) -> None:
    def stopped() -> None:
        raise AttemptStopped("lost")

    with pytest.raises(AttemptStopped), side_effect("write", "y", stopped):
        raise AssertionError("the block must not run")


# The file system stamps with the coarse realtime clock, up to a tick (1-10 ms) behind.
TICK_NS = 50_000_000


@pytest.mark.parametrize("action", ["write", "delete", "rmdir"])
def test_a_successful_effect_s_after_line_carries_the_kernel_s_time_of_it(
    tmp_path: Path, action: str
) -> None:
    folder = tmp_path / "proxies" / "ab"
    folder.mkdir(parents=True)
    target = folder / "thumbnail.jpg"
    staged = tmp_path / "staged.jpg"
    staged.write_bytes(b"jpeg")
    if action == "delete":
        target.write_bytes(b"jpeg")
    if action == "rmdir":
        target.mkdir()
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    real_before = time.time_ns()
    with (
        attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3),
        side_effect(action, target),
    ):
        if action == "write":
            os.replace(staged, target)
        elif action == "delete":
            target.unlink()
        else:
            target.rmdir()
        # What the kernel stamped the folder with, at the syscall.
        at_syscall = os.stat(folder).st_ctime_ns
    real_after = time.time_ns()
    journal.close()
    before, after = _lines(tmp_path / "effects.jsonl")
    assert "folder_ctime_ns" not in before
    stamp, real = after["folder_ctime_ns"], after["realtime_ns"]
    assert isinstance(stamp, int) and isinstance(real, int)
    # The target's folder, read after the syscall: at or after the syscall's own stamp
    # (only later changes move it), and so not before the "before" line but for a tick.
    assert stamp >= at_syscall >= real_before - TICK_NS
    # Read before the line's time; both within the block's real time.
    assert stamp <= real <= real_after


def test_the_kernel_s_time_is_the_folder_s_ctime_so_a_utime_cannot_set_it_back(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "ab"
    folder.mkdir()
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    real_before = time.time_ns()
    with (
        attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3),
        side_effect("write", folder / "a.jpg"),
    ):
        (folder / "a.jpg").write_bytes(b"jpeg")
        os.utime(folder, ns=(0, 0))  # an mtime from 1970; the ctime moves on
    journal.close()
    after = _lines(tmp_path / "effects.jsonl")[1]
    assert after["folder_ctime_ns"] >= real_before - TICK_NS  # type: ignore[operator]


def test_a_failed_effect_or_an_unreadable_folder_records_no_kernel_time(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    with attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3):
        with pytest.raises(FileNotFoundError), side_effect("delete", tmp_path / "gone.jpg"):
            (tmp_path / "gone.jpg").unlink()
        with side_effect("rmdir", tmp_path / "nowhere" / "x"):
            pass  # "succeeded", but its folder cannot be read
    journal.close()
    afters = [x for x in _lines(tmp_path / "effects.jsonl") if x["phase"] == "after"]
    assert [sorted(x) for x in afters] == [
        ["action", "attempt", "config", "item", "ok", "phase", "pid", "realtime_ns", "t", "target"]
    ] * 2


def test_every_line_carries_the_real_clock_read_at_it(tmp_path: Path) -> None:
    """The checker places each effect on the database's (real) clock through its own
    lines: before, after, failed and refused ones alike, each read as it is written."""

    def stopped() -> None:
        raise AttemptStopped("lost")

    journal = Journal(tmp_path / "effects.jsonl", FakeClock(monotonic_start=5.0))
    real_before = time.time_ns()
    with attempt_scope(journal, config_id=CONFIG, item_id=7, attempt=3):
        with side_effect("mkdir", tmp_path / "a"):
            (tmp_path / "a").mkdir()
        real_between = time.time_ns()
        with pytest.raises(FileNotFoundError), side_effect("delete", tmp_path / "gone"):
            (tmp_path / "gone").unlink()
        with pytest.raises(AttemptStopped), side_effect("write", tmp_path / "b", stopped):
            raise AssertionError("the block must not run")
    real_after = time.time_ns()
    journal.close()
    stamped = [line["realtime_ns"] for line in _lines(tmp_path / "effects.jsonl")]
    assert len(stamped) == 6
    assert all(isinstance(real, int) for real in stamped)
    reals = cast(list[int], stamped)
    assert real_before <= reals[0] <= reals[1] <= real_between <= reals[2]
    assert reals == sorted(reals) and reals[-1] <= real_after


def test_without_a_journal_no_kernel_time_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stats: list[object] = []
    real_stat = os.stat

    def counted(path: object, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(path)
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", counted)
    with (
        attempt_scope(None, config_id=CONFIG, item_id=7, attempt=3),
        side_effect("delete", tmp_path / "x"),
    ):
        pass
    with side_effect("delete", tmp_path / "y"):
        pass
    assert stats == []
