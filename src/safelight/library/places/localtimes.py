"""The zone rule (ADR 0065): a capture time the camera wrote without an offset gets the
zone of the position it was taken at.

The catalogue keeps two times of an asset: the instant (``captured_at``) and the wall
clock where it was taken (``captured_local``). A file gives one of three things:

- a wall clock and its offset (EXIF with OffsetTime, an iPhone's video): both times are
  known, and the file's zone is kept (``zone_source`` ``'file'``), whatever the position;
- a wall clock alone (most EXIF): with a position, it is read in the position's zone, so
  ``captured_at`` becomes the true instant and ``captured_local`` stays as written
  (``'position'``); without one it is read as UTC (ADR 0064; ``zone_source`` NULL);
- an instant alone, UTC by its format (QuickTime's ``creation_time``, the only date of
  most Android videos; PNG's ``tIME``; the file's time on disk): with a position, its
  local time, and so its day, is the instant in the position's zone (``'position'``);
  without one the local time is the UTC time, which is still the true instant
  (``'file'``).

An ambiguous wall clock (the hour a clock turns back) is read as the first of its two
instants and one that does not exist (the hour skipped) with the offset before the gap:
``zoneinfo``'s ``fold=0``, as ExifTool and most viewers do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from zoneinfo import ZoneInfo

ZoneSource = Literal["file", "position"]
"""``assets.zone_source``: where the offset between the two times came from."""

LESS_LOCAL_SOURCES = frozenset({"png"})
"""Capture-time sources of rows from before the rule (``zone_source`` NULL) whose zero
offset can mean either a wall clock read as UTC or a UTC instant: left as they are."""

INSTANT_SOURCES = frozenset({"video", "file"})
"""Sources of rows from before the rule whose zero offset is taken for a UTC instant: a
video's QuickTime ``creation_time`` (the one date most phones' videos carry) and the
file's time on disk. Every other source's zero offset is taken for a wall clock."""


@dataclass(frozen=True, slots=True)
class LocalisedTimes:
    """An asset's two capture times and where their offset came from."""

    instant: datetime
    """Aware."""
    local: datetime
    """Naive: the wall clock where it was taken."""
    zone_source: ZoneSource | None


def localise(captured_at: datetime, *, is_instant: bool, zone: str | None) -> LocalisedTimes:
    """The two times of a capture time as a file gave it: ``captured_at`` naive (a wall
    clock), aware with the file's offset, or aware UTC with ``is_instant`` (an instant
    without a local time); ``zone``: the IANA zone at its position, None without one."""
    if captured_at.tzinfo is None:
        if zone is None:
            return LocalisedTimes(captured_at.replace(tzinfo=UTC), captured_at, None)
        instant = captured_at.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)
        return LocalisedTimes(instant, captured_at, "position")
    if is_instant and zone is not None:
        local = captured_at.astimezone(ZoneInfo(zone)).replace(tzinfo=None)
        return LocalisedTimes(captured_at, local, "position")
    return LocalisedTimes(captured_at, captured_at.replace(tzinfo=None), "file")


def relocalise(
    captured_at: datetime, captured_local: datetime, source: str, zone: str | None
) -> LocalisedTimes:
    """The rule applied afterwards to a row catalogued before it (``zone_source`` NULL),
    whose file is not read again: what it gave is known only from the row.

    A row whose two times differ had its offset from the file (``'file'``), kept. Equal
    times are a wall clock read as UTC or a UTC instant; which, the row does not say, so
    its capture-time source decides: a video's or the file's time is taken for an
    instant (``INSTANT_SOURCES``), a PNG's is left alone (``LESS_LOCAL_SOURCES``), and
    every other (EXIF, XMP, IPTC, a maker's block, a sidecar) for a wall clock, by far
    the commoner case. A real ``+00:00`` an EXIF OffsetTime wrote is then read in the
    position's zone: the same instant wherever UTC is the local time in winter, as in
    Lisbon or London. Without a zone, nothing changes."""
    if captured_local != captured_at.astimezone(UTC).replace(tzinfo=None):
        return LocalisedTimes(captured_at, captured_local, "file")
    if zone is None or source in LESS_LOCAL_SOURCES:
        return LocalisedTimes(captured_at, captured_local, None)
    if source in INSTANT_SOURCES:
        return localise(captured_at, is_instant=True, zone=zone)
    return localise(captured_local, is_instant=False, zone=zone)
