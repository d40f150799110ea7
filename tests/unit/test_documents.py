"""The documents both front ends show (``safelight.views.documents``): a work item as
JSON, an attempt's progress as one line, and the one JSON encoding of the CLI's
``--json`` and the dashboard's API."""

from __future__ import annotations

import dataclasses
import enum
import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import pytest

from safelight.views.documents import item_document, json_default, progress_line
from safelight.work.model import Status, WorkItem

CONFIG = UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
T = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


class _Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (T, "2026-03-01T12:00:00+00:00"),
        (date(2026, 3, 1), "2026-03-01"),
        (timedelta(minutes=1, milliseconds=500), 60.5),
        (Status.FAILED, "failed"),
        (_Colour.RED, "red"),
        (CONFIG, "0f8fad5b-d9cb-469f-a165-70867728950e"),
        (Path("/library/a.jpg"), "/library/a.jpg"),
        (Decimal("1.25"), "1.25"),
        ((1, 2), [1, 2]),
        (frozenset({"only"}), ["only"]),
        ({3}, [3]),
    ],
)
def test_each_kind_of_value_has_one_encoding(value: object, encoded: object) -> None:
    assert json_default(value) == encoded
    assert json.loads(json.dumps({"v": value}, default=json_default)) == {"v": encoded}


def test_a_value_of_no_known_kind_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match=r"^cannot write complex as JSON$"):
        json_default(1j)


def _item() -> WorkItem:
    """An item whose every field differs from every other's, so a field shown under
    another's name, or not at all, shows."""
    return WorkItem(
        id=7,
        kind="crawl",
        storage_config_id=CONFIG,
        dedup_key="crawl:7",
        payload={"full": True},
        status=Status.RUNNING,
        requested_at=T,
        attempt=2,
        stalls=1,
        worker_id="nas/0",
        started_at=T + timedelta(seconds=1),
        heartbeat_at=T + timedelta(seconds=2),
        lease_expires_at=T + timedelta(seconds=3),
        finished_at=T + timedelta(seconds=4),
        cancel_requested=True,
        error="boom",
        result={"found": 3},
        retries=4,
        not_before=T + timedelta(seconds=5),
        progress={"attempt": 2, "counts": {"found": 3}},
    )


def test_a_work_item_shows_every_field_under_its_own_name() -> None:
    item = _item()

    document = item_document(item)

    expected = {f.name: getattr(item, f.name) for f in dataclasses.fields(WorkItem)}
    assert document == expected | {"status": "running"}


def test_no_progress_is_no_line() -> None:
    assert progress_line(None) is None
    assert progress_line({}) is None


def test_progress_names_its_attempt_and_the_counters_that_moved_in_name_order() -> None:
    line = progress_line({"attempt": 3, "counts": {"proxies": 399, "found": 133, "moved": 0}})

    assert line == "attempt 3: found 133, proxies 399"


def test_progress_with_every_counter_at_zero_says_nothing_yet() -> None:
    assert progress_line({"attempt": 1, "counts": {"found": 0}}) == "attempt 1: nothing yet"
    assert progress_line({"attempt": 1, "counts": {}}) == "attempt 1: nothing yet"


def test_progress_of_another_shape_is_shown_as_it_was_saved() -> None:
    saved = {"attempt": 1, "counts": [1, 2]}

    assert progress_line(saved) == json.dumps(saved)
