"""A capture time as it is shown (the dashboard's tiles and preview): the local time
where it was taken, to the second, with its offset when the catalogue knows it.

The catalogue keeps two columns (``assets.captured_at``, the instant; ``captured_local``,
the wall clock where it was taken) and no zone: the offset is their difference. A time
whose zone was unknown (most cameras' EXIF) is stored as its wall clock read as UTC
(``library.walk.newasset.capture_times``), so a difference of zero means either UTC or
"unknown". Two things tell them apart: a source that is always an instant (a file's
time on disk), and, since migration 0023, ``assets.zone_source``, set when the file
recorded its zone or the position gave one (ADR 0065): a London photo in winter is
then "+00:00". Any other zero difference is shown without an offset: "14:03:12" never
claims a zone it does not know, where "14:03:12 +00:00" would (ADR 0064)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

INSTANT_SOURCES = frozenset({"file"})
"""Sources (``assets.captured_at_source``) whose time is always an instant: their zero
offset is UTC, not a zone unknown."""


def offset_text(offset: timedelta) -> str:
    """``+02:00``, ``-05:30``, ``+00:00`` (to the minute)."""
    minutes = round(offset.total_seconds() / 60)
    sign = "-" if minutes < 0 else "+"
    hours, rest = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}:{rest:02d}"


def capture_offset(
    instant: datetime, local: datetime, source: str | None, zone_source: str | None = None
) -> timedelta | None:
    """The offset of ``local`` from UTC at ``instant``, or None when the zone is unknown
    (a zero difference from a source that is not always an instant, with no
    ``zone_source`` to say the zone was known)."""
    offset = local - instant.astimezone(UTC).replace(tzinfo=None)
    if not offset and source not in INSTANT_SOURCES and zone_source is None:
        return None
    return offset


def capture_time_text(
    instant: datetime, local: datetime, source: str | None, zone_source: str | None = None
) -> str:
    """``2023-06-15 14:03:12 +02:00``; ``2023-06-15 14:03:12`` when the zone is unknown."""
    shown = local.replace(microsecond=0).isoformat(sep=" ")
    offset = capture_offset(instant, local, source, zone_source)
    return shown if offset is None else f"{shown} {offset_text(offset)}"
