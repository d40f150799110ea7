"""The first hour's rough edges in the CLI's words (issue #31, item 6): plurals, the
files and folders that could not be read, summaries without trailing spaces, and an
estimate of the time left only once the rate means something."""

from __future__ import annotations

import io
from datetime import datetime
from pathlib import Path
from uuid import UUID

import pytest
from rich.console import Console, Group
from rich.table import Table

from safelight.app import FinishedItem
from safelight.cli.assets import local_time
from safelight.cli.output import print_trimmed
from safelight.cli.progress import ESTIMATE_AFTER_FILES, ESTIMATE_AFTER_SECONDS, TimeLeft, detail
from safelight.cli.run import item_label, other_work
from safelight.cli.summary import (
    INTERRUPTED,
    build_summary,
    not_ingested,
    other_line,
    render_summary,
)
from safelight.words import plural


@pytest.mark.parametrize(
    ("count", "expected"),
    [(0, "0 files"), (1, "1 file"), (2, "2 files"), (-1, "-1 files")],
)
def test_plural_agrees_with_its_count(count: int, expected: str) -> None:
    assert plural(count, "file") == expected


def test_plural_takes_a_phrase_whose_verb_and_pronoun_agree() -> None:
    one, many = "photo dated by its file's time", "photos dated by their file's time"
    assert plural(1, one, many) == "1 photo dated by its file's time"
    assert plural(3, one, many) == "3 photos dated by their file's time"
    assert plural(2, "entry", "entries") == "2 entries"
    assert plural(1, "Live Photo pair") == "1 Live Photo pair"


def test_the_progress_counters_say_one_error() -> None:
    assert detail({"errors": 1}).endswith("· 1 error")
    assert detail({"errors": 2}).endswith("· 2 errors")


def test_a_folder_that_could_not_be_read_is_no_file() -> None:
    file, folder = {"path": "a/bad.jpg"}, {"path": "locked/"}
    assert not_ingested([file, dict(file)]) == "2 files could not be ingested"
    assert not_ingested([file]) == "1 file could not be ingested"
    assert not_ingested([file, folder]) == "1 file and 1 folder could not be read"
    assert not_ingested([folder]) == "1 folder could not be read"


def test_a_printed_grid_has_no_trailing_spaces() -> None:
    out = io.StringIO()
    console = Console(file=out, width=200, soft_wrap=True, markup=False, highlight=False)
    grid = Table.grid(padding=(0, 2))
    grid.add_column()
    grid.add_column()
    grid.add_row("folder", "x" * 150)
    grid.add_row("assets", "3 photos")
    print_trimmed(console, Group("headline", grid))
    lines = out.getvalue().split("\n")
    assert lines == ["headline", f"folder  {'x' * 150}", "assets  3 photos", ""]


def test_no_estimate_until_enough_files_were_done_after_the_first() -> None:
    left = TimeLeft()
    assert left.seconds(0.0, 0, 100) is None  # nothing done
    assert left.seconds(5.0, 1, 100) is None  # the first file: the start-up's wait
    # Many files, but too soon after the first.
    assert left.seconds(5.0 + ESTIMATE_AFTER_SECONDS / 2, 1 + ESTIMATE_AFTER_FILES, 100) is None
    # Too few files, long after.
    assert left.seconds(60.0, ESTIMATE_AFTER_FILES, 100) is None


def test_the_estimate_is_the_rate_since_the_first_file_not_since_the_start() -> None:
    left = TimeLeft()
    left.seconds(10.0, 1, 101)  # the first file came after 10 s of start-up
    # 20 more files in 4 s: 5 files/s, 80 left: 16 s (from the start: 21 files in 14 s).
    assert left.seconds(14.0, 21, 101) == pytest.approx(16.0)
    assert left.seconds(15.0, 101, 101) is None  # done


A, B = UUID(int=1), UUID(int=2)
FOLDERS = {A: Path("/photos/A"), B: Path("/photos/B")}


def test_a_crawl_is_labelled_by_its_own_folder() -> None:
    assert item_label("crawl", 7, A, FOLDERS) == "crawl A"
    assert item_label("crawl", 8, B, FOLDERS) == "crawl B"
    assert item_label("burst_detection", 9, B, FOLDERS) == "burst detection #9"
    assert item_label("crawl", 10, None, FOLDERS) == "crawl #10"


def finished(item_id: int, kind: str, config: UUID | None, total: int | None) -> FinishedItem:
    result = None if total is None else {"total": total}
    return FinishedItem(item_id, kind, config, "succeeded", result, None, False)


def test_the_summary_says_what_else_ran_and_its_files() -> None:
    ran = [
        finished(1, "crawl", A, 112),  # left queued by an interrupted run of A
        finished(2, "crawl", B, 9),
        finished(3, "burst_detection", A, None),
        finished(4, "noop", None, None),  # unscoped: no folder's
    ]
    others = other_work(ran, B, FOLDERS)
    assert [o["label"] for o in others] == ["crawl A", "burst detection #3"]
    assert [other_line(o) for o in others] == [
        "crawl A: succeeded (112 files)",
        "burst detection #3: succeeded",
    ]
    assert other_line({"label": "crawl A", "outcome": "succeeded", "files": 1}).endswith("(1 file)")


@pytest.mark.parametrize(
    ("local", "instant", "shown"),
    [
        (
            datetime(2022, 1, 10, 15, 15, 44),
            "2022-01-10T19:15:44+00:00",
            "2022-01-10 15:15:44 -04:00",
        ),
        (
            datetime(2019, 6, 1, 14, 3, 22),
            "2019-06-01T08:33:22+00:00",
            "2019-06-01 14:03:22 +05:30",
        ),
        # No offset in the file: the wall-clock time read as UTC, shown as shot, no offset.
        (
            datetime(2019, 6, 1, 14, 3, 22),
            "2019-06-01T14:03:22+00:00",
            "2019-06-01 14:03:22",
        ),
        (None, "2019-06-01T14:03:22+02:00", "2019-06-01 12:03:22 UTC"),
    ],
)
def test_the_assets_listing_shows_local_capture_time_with_its_offset(
    local: datetime | None, instant: str, shown: str
) -> None:
    assert local_time(local, datetime.fromisoformat(instant), "exif") == shown


def test_the_assets_listing_says_a_zero_offset_it_knows() -> None:
    """As the dashboard does (views.capturetimes): the file's time is an instant, and a
    zone known from the file or the position makes +00:00 an offset, not "no zone"."""
    wall, instant = datetime(2024, 1, 10, 9, 30), datetime.fromisoformat("2024-01-10T09:30+00:00")
    assert local_time(wall, instant, "file") == "2024-01-10 09:30:00 +00:00"
    assert local_time(wall, instant, "exif", "position") == "2024-01-10 09:30:00 +00:00"
    assert local_time(wall, instant, "exif") == "2024-01-10 09:30:00"


def interrupted_summary(errors: int) -> dict[str, object]:
    library = dict.fromkeys(
        ("images", "videos", "soft_deleted", "bursts", "burst_assets", "live_photos"), 0
    )
    return build_summary(
        status=INTERRUPTED,
        exit_code=130,
        database="test",
        config={"id": UUID(int=1), "owner": "alice", "root": "/photos"},
        crawl={
            "item_id": 1,
            "status": "queued",
            "error": None,
            "result": None,
            "progress": {"total": 9, "found": 5, "errors": errors},
        },
        library={**library, "stacks": 0, "proxy_files": 0},
        stored_errors=[],
        proxy_folder=Path("/proxies/1"),
        seconds=2.0,
        items=[],
    )


def test_an_interrupted_run_says_the_files_it_failed() -> None:
    document = interrupted_summary(errors=2)
    assert document["errors_this_run"] == 2
    out = io.StringIO()
    render_summary(Console(file=out, width=200, color_system=None), document)
    text = out.getvalue()
    assert "2 files could not be ingested in this run before it stopped" in text
    assert "lists them" in text
    quiet = io.StringIO()
    render_summary(Console(file=quiet, width=200, color_system=None), interrupted_summary(0))
    assert "could not be ingested" not in quiet.getvalue()
