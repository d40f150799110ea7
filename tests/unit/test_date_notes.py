"""A date that is only the file's last edit or its time on disk is shown as the guess it
is (ADR 0053): in ``safelight assets``, on the dashboard and in the run's summary."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, get_args

from safelight.cli.assets import _captured
from safelight.library.media.capturetime import LESS_CERTAIN_SOURCES, CapturedAtSource
from safelight.testing.summaries import rendered, summary_document
from safelight.views.datenotes import DATE_NOTES, date_note


def test_every_source_that_is_no_capture_date_has_words_and_no_other_has() -> None:
    assert set(DATE_NOTES) == {*LESS_CERTAIN_SOURCES, "file"}
    assert set(DATE_NOTES) <= set(get_args(CapturedAtSource))
    for guess in LESS_CERTAIN_SOURCES:
        assert "less certain" in DATE_NOTES[guess]
    for source in ("sidecar", "exif", "xmp", "iptc", "maker", "video", None):
        assert date_note(source) is None


def test_the_assets_listing_qualifies_a_guessed_date_only() -> None:
    row: dict[str, Any] = {
        "captured_at": datetime.fromisoformat("2021-06-07 08:09:10+02:00"),
        "captured_local": datetime(2021, 6, 7, 8, 9, 10),
    }
    assert _captured({**row, "captured_at_source": "exif"}) == "2021-06-07 08:09:10 +02:00"
    assert _captured({**row, "captured_at_source": "modified"}) == (
        "2021-06-07 08:09:10 +02:00 (date from the file's last edit (less certain))"
    )
    assert "time on disk" in _captured({**row, "captured_at_source": "file"})


def _document(**library: int) -> dict[str, Any]:
    counts = {"images": 3, "videos": 0, "soft_deleted": 0, "bursts": 0, "burst_assets": 0}
    return summary_document(
        status="succeeded",
        database="postgresql://u:***@h/db",
        crawl={"result": {"total": 3, "ingested": 3}},
        library={**counts, "stacks": 0, "proxy_files": 0, **library},
        stored_errors=[],
        proxy_folder=Path("/proxies/7"),
        seconds=1.0,
        items=[],
    )


def test_the_summary_counts_photos_dated_by_their_last_edit_beside_those_by_file() -> None:
    both = _document(photos_dated_by_file=1, photos_dated_by_last_edit=2)
    assert (both["photos_dated_by_file"], both["photos_dated_by_last_edit"]) == (1, 2)
    text = rendered(both)
    assert "1 photo dated by its file's time (no date inside the file)" in text
    assert "2 photos dated by the file's last edit (less certain)" in text
    only_edit = rendered(_document(photos_dated_by_last_edit=1))
    assert "1 photo dated by the file's last edit" in only_edit
    assert "file's time" not in only_edit
    assert "dates" not in rendered(_document())
