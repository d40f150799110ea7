"""The side-effect journal: lines before and after each effect, only inside an attempt."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from uuid import UUID

import pytest

from safelight.work.errors import AttemptStopped
from safelight.work.fakeclock import FakeClock
from safelight.work.journal import Journal, attempt_scope, side_effect
from tests.items import running_item

CONFIG = UUID("00000000-0000-0000-0000-0000000000c1")
ITEM = running_item(id=7, attempt=3, config=CONFIG)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_effects_inside_an_attempt_are_journalled_before_and_after(
    tmp_path: Path,
) -> None:
    clock = FakeClock(monotonic_start=100.0)
    journal = Journal(tmp_path / "j" / "effects.jsonl", clock)
    with attempt_scope(journal, ITEM):
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
    with attempt_scope(journal, ITEM), pytest.raises(OSError), side_effect("delete", "x"):
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
    with attempt_scope(None, ITEM), side_effect("write", "y"):
        pass
    journal.close()
    assert (tmp_path / "effects.jsonl").read_text() == ""


def test_an_attempt_stopped_while_its_line_was_written_changes_nothing(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "effects.jsonl", FakeClock())
    touched: list[str] = []

    def stopped() -> None:
        raise AttemptStopped("self-stopped")

    with (
        attempt_scope(journal, ITEM),
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
