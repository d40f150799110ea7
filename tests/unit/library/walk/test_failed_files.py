"""When a crawl reads a file that failed again (``library.walk.failures``, ADR 0057):
changed, due, or nothing known of it; otherwise never."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from safelight.library.catalogue.assets import FailedFile
from safelight.library.walk.failures import needs_inode, read_again, retry_after

NOW = datetime(2026, 6, 15, 12, tzinfo=UTC)
DAY = timedelta(days=1)
FAILED = FailedFile("a.jpg", "corrupt", 1, 100, 5_000, 42, NOW + DAY)


def test_an_unchanged_file_is_read_again_only_once_due() -> None:
    assert not read_again(FAILED, 100, 5_000, 42, NOW)
    assert not read_again(FAILED, 100, 5_000, 42, NOW + DAY - timedelta(microseconds=1))
    assert read_again(FAILED, 100, 5_000, 42, NOW + DAY)


@pytest.mark.parametrize(
    ("size", "modified_ns", "inode"),
    [(101, 5_000, 42), (100, 5_001, 42), (100, 5_000, 43), (100, 5_000, None)],
)
def test_a_changed_file_or_one_whose_inode_is_not_known_is_read_again(
    size: int, modified_ns: int, inode: int | None
) -> None:
    assert read_again(FAILED, size, modified_ns, inode, NOW)


@pytest.mark.parametrize(
    "unknown",
    [
        pytest.param(replace(FAILED, size=None), id="size"),
        pytest.param(replace(FAILED, modified_ns=None), id="modified_ns"),
        pytest.param(replace(FAILED, inode=None), id="inode"),
        pytest.param(replace(FAILED, retry_after=None), id="retry_after"),
    ],
)
def test_a_record_that_knows_nothing_of_the_file_is_read_again(unknown: FailedFile) -> None:
    assert read_again(unknown, 100, 5_000, 42, NOW)


def test_the_inode_is_asked_for_only_when_size_and_time_would_leave_it_alone() -> None:
    assert needs_inode(FAILED, 100, 5_000, NOW)
    assert not needs_inode(FAILED, 101, 5_000, NOW)
    assert not needs_inode(FAILED, 100, 5_000, NOW + DAY)
    assert not needs_inode(replace(FAILED, inode=None), 100, 5_000, NOW)


def test_the_backoff_doubles_by_the_failures_up_to_its_longest() -> None:
    waits = [retry_after(n, NOW, DAY, 30 * DAY) - NOW for n in (1, 2, 3, 4, 5, 6, 100, 10**6)]
    assert waits == [DAY, 2 * DAY, 4 * DAY, 8 * DAY, 16 * DAY, 30 * DAY, 30 * DAY, 30 * DAY]
