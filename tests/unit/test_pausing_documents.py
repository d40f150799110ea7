"""What is shown of a pause and of the heavy hours (ADR 0060): ``status --json``, the
queue page and ``/api/status`` carry these documents."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from safelight.work.hours import HeavyHours, HeavyWindow
from safelight.work.pausing import Paused, heavy_hours_document, paused_document

AT = datetime(2026, 1, 1, 14, 2, 30, tzinfo=UTC)
LOCAL = AT.astimezone().strftime("%Y-%m-%d %H:%M")  # shown in the machine's local time
CONFIG = UUID("00000000-0000-4000-8000-000000000001")
WINDOW = HeavyWindow(HeavyHours.parse("01:00-07:00", UTC), frozenset({"crawl", "remake"}))


def test_a_pause_says_who_paused_it_and_when() -> None:
    by_alice = Paused(None, CONFIG, "alice", "/photos", AT, "alice", 3)
    assert by_alice.since() == f"paused (by alice at {LOCAL})"
    assert Paused("crawl", None, None, None, AT, None, 0).since() == f"paused (at {LOCAL})"
    assert paused_document(by_alice) == {
        "kind": None,
        "config_id": CONFIG,
        "owner": "alice",
        "root_path": "/photos",
        "paused_at": AT,
        "paused_by": "alice",
        "queued": 3,
        "shown": f"paused (by alice at {LOCAL})",
    }


def test_the_heavy_hours_say_whether_they_are_open() -> None:
    assert heavy_hours_document(None, AT) is None
    assert heavy_hours_document(WINDOW, AT) == {
        "window": "01:00-07:00",
        "kinds": ["crawl", "remake"],
        "open": False,
        "shown": "waits for heavy hours (01:00)",
    }
    assert heavy_hours_document(WINDOW, AT.replace(hour=3)) == {
        "window": "01:00-07:00",
        "kinds": ["crawl", "remake"],
        "open": True,
        "shown": "open until 07:00",
    }
