"""A capture time as the dashboard shows it (``views.capturetimes``): the local time to
the second, with the offset the catalogue's two columns imply, and none where the zone
was unknown (a naive time is stored as its wall clock read as UTC)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest

from safelight.library.places.localtimes import localise
from safelight.views.capturetimes import capture_offset, capture_time_text, offset_text
from safelight.web.onthisday import near_date


def shown(captured: datetime, source: str = "exif") -> str:
    """As a crawl stores ``captured`` without a position (``localise``) and the dashboard
    shows it."""
    times = localise(captured, is_instant=False, zone=None)
    return capture_time_text(times.instant, times.local, source)


@pytest.mark.parametrize(
    ("captured", "text"),
    [
        (
            datetime(2024, 7, 15, 14, 3, 12, 345678, tzinfo=timezone(timedelta(hours=2))),
            "2024-07-15 14:03:12 +02:00",
        ),
        (
            datetime(2023, 12, 31, 23, 30, 5, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
            "2023-12-31 23:30:05 -05:30",
        ),
        (
            datetime(2022, 6, 15, 0, 30, tzinfo=timezone(timedelta(hours=9))),
            "2022-06-15 00:30:00 +09:00",
        ),
        # The camera's wall clock, zone unknown: no offset, and no microseconds.
        (datetime(2021, 6, 15, 15, 0, 0, 120000), "2021-06-15 15:00:00"),
    ],
)
def test_the_local_time_to_the_second_and_its_offset_when_known(
    captured: datetime, text: str
) -> None:
    assert shown(captured) == text


def test_a_zero_offset_is_utc_only_from_a_source_that_is_always_an_instant() -> None:
    at = datetime(2024, 6, 1, 12, 0, 0, tzinfo=UTC)
    # A file's time on disk is an instant: UTC, and said.
    assert shown(at, "file") == "2024-06-01 12:00:00 +00:00"
    # From EXIF, +00:00 and "no zone" are stored alike: nothing is claimed.
    assert shown(at, "exif") == "2024-06-01 12:00:00"
    assert capture_offset(at, at.replace(tzinfo=None), "exif") is None
    assert capture_offset(at, at.replace(tzinfo=None), "file") == timedelta(0)


def test_a_zero_offset_whose_zone_is_known_is_said() -> None:
    """A London photo in winter, its zone from its position or from the file (ADR 0065):
    +00:00 is then known, not "no zone"."""
    at = datetime(2024, 1, 10, 9, 30, 0, tzinfo=UTC)
    wall = at.replace(tzinfo=None)
    assert capture_offset(at, wall, "exif", "position") == timedelta(0)
    assert capture_time_text(at, wall, "exif", "file") == "2024-01-10 09:30:00 +00:00"
    assert capture_time_text(at, wall, "exif", None) == "2024-01-10 09:30:00"


def test_the_offset_is_read_from_the_instant_in_any_zone() -> None:
    # psycopg gives timestamptz in the session's zone: the offset is the same.
    instant = datetime(2024, 7, 15, 12, 3, 12, tzinfo=UTC).astimezone(timezone(timedelta(hours=-7)))
    assert capture_time_text(instant, datetime(2024, 7, 15, 14, 3, 12), "exif") == (
        "2024-07-15 14:03:12 +02:00"
    )
    assert offset_text(timedelta(hours=-3, minutes=-30)) == "-03:30"
    assert offset_text(timedelta(hours=13, minutes=45)) == "+13:45"


def test_29_february_leads_to_the_28th_of_a_common_year() -> None:
    assert near_date(date(2027, 3, 5), 2, 29) == date(2027, 2, 28)
    assert near_date(date(2028, 3, 5), 2, 29) == date(2028, 2, 29)
    assert near_date(date(2027, 3, 5), 12, 31) == date(2027, 12, 31)
