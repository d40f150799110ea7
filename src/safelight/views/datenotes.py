"""How a photo's date is qualified where it is shown (``safelight assets``, the
dashboard's tiles and preview), by the place it came from (``assets.captured_at_source``,
the sources of ``library.media.capturetime``): a date of the file's last write
(ADR 0053) or of its time on disk is shown as the guess it is; a capture date is shown
bare."""

from __future__ import annotations

from collections.abc import Mapping

DATE_NOTES: Mapping[str, str] = {
    "modified": "date from the file's last edit (less certain)",
    "png": "date from the PNG's own time stamp (less certain)",
    "file": "date from the file's time on disk (no date inside)",
}
"""The words for each source that is not a capture date; the others have none."""


def date_note(source: str | None) -> str | None:
    """The words that qualify a date from ``source``, or None for a capture date."""
    return DATE_NOTES.get(source or "")
