"""The pure parts of the failed files' views (ADR 0058): the keyset cursor of a reason's
pages, when a failed file is due, and the queue's word when items wait with no Worker."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from safelight.cli.main import cli
from safelight.views.failedfiles import NEXT_CRAWL, FileCursor, is_due, next_try
from safelight.views.waiting import WORKER_COMMAND, no_worker_note

NOW = datetime(2026, 12, 3, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize("path", ["a.jpg", "trip/with | bar.jpg", "ünï/c\u202eode.jpg", ""])
def test_a_cursor_reads_back_as_written(path: str) -> None:
    cursor = FileCursor(NOW - timedelta(microseconds=7), path)
    token = cursor.encode()
    assert "=" not in token and "/" not in token and "+" not in token
    assert FileCursor.decode(token) == cursor


@pytest.mark.parametrize("token", ["", "x!", "bm8gYmFy", "MjAyNi0xMi0wMyAxNTowMDowMHxhLmpwZw"])
def test_anything_else_is_no_cursor(token: str) -> None:
    # The last: a time with no offset, which could not be compared with last_seen_at.
    with pytest.raises(ValueError, match="not a cursor"):
        FileCursor.decode(token)


def test_a_failed_file_is_due_when_its_time_came_or_nothing_is_known() -> None:
    assert is_due(None, NOW) and is_due(NOW, NOW) and is_due(NOW - timedelta(seconds=1), NOW)
    assert not is_due(NOW + timedelta(seconds=1), NOW)
    # A file that failed before it was opened is read at the next crawl, whatever its time.
    assert is_due(NOW + timedelta(days=1), NOW, unknown=True)
    later = NOW + timedelta(days=2)
    assert next_try({"due": True, "retry_after": later}, str) == NEXT_CRAWL
    assert next_try({"due": False, "retry_after": later}, lambda t: t.date().isoformat()) == (
        "when it changes, or after 2026-12-05"
    )


def test_the_queue_speaks_only_when_items_wait_and_no_worker_is_seen() -> None:
    assert no_worker_note(0, 0) is None
    assert no_worker_note(3, 1) is None
    assert no_worker_note(1, 0) == (
        "1 item waits: no Worker is running. Start one with 'safelight worker'."
    )
    assert no_worker_note(3, 0) == (
        "3 items wait: no Worker is running. Start one with 'safelight worker'."
    )


def test_the_command_it_names_is_the_worker_command() -> None:
    program, command = WORKER_COMMAND.split()
    assert program == "safelight" and cli.commands[command].name == "worker"
