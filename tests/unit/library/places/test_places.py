"""The place and the zone at known positions (``library.places``), and the zone rule
that turns a capture time without an offset into the true instant and the local wall
clock (``places.localtimes``, ADR 0065)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from safelight.library.places.localtimes import LocalisedTimes, localise, relocalise
from safelight.library.places.located import NOWHERE, locate
from safelight.library.places.placenames import MAX_DISTANCE_KM, Place, nearest_place
from safelight.library.places.timezones import zone_name_at

# --- the place ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latitude", "longitude", "city", "country", "code"),
    [
        # The city, not the quarter whose point lies nearer (Intendente, Lambeth).
        (38.72, -9.14, "Lisbon", "Portugal", "PT"),
        (51.5, -0.12, "London", "United Kingdom", "GB"),
        # A town 7 km out keeps its own name, though the city's reach touches it.
        (38.7589, -9.2302, "Amadora", "Portugal", "PT"),
        # The border: Strasbourg's reach crosses the Rhine, but Kehl stays in Germany.
        (48.5734, 7.7521, "Strasbourg", "France", "FR"),
        (48.5722, 7.8150, "Kehl", "Germany", "DE"),
        (48.5725, 7.7900, "Kehl", "Germany", "DE"),
        # Either side of the date line.
        (-18.14, 178.44, "Suva", "Fiji", "FJ"),
        (-13.83, -171.76, "Apia", "Samoa", "WS"),
        (-14.28, -170.70, "Pago Pago", "American Samoa", "AS"),
        # Across the line: 38 km west over it, not a town 300 km east on this side (as a
        # tree of degrees finds, where -179.9 and 179.35 lie 359 degrees apart).
        (63.0, -179.9, "Beringovskiy", "Russian Federation", "RU"),
        # Near the pole.
        (78.22, 15.65, "Longyearbyen", "Svalbard and Jan Mayen", "SJ"),
    ],
)
def test_the_place_at_a_known_position(
    latitude: float, longitude: float, city: str, country: str, code: str
) -> None:
    place = nearest_place(latitude, longitude)
    assert place is not None
    assert (place.city, place.country, place.country_code) == (city, country, code)


def test_a_place_has_its_region() -> None:
    assert nearest_place(48.5722, 7.8150) == Place("Kehl", "Baden-Wurttemberg", "Germany", "DE")


@pytest.mark.parametrize(
    ("latitude", "longitude"),
    [(40.0, -30.0), (0.0, -140.0), (-60.0, 0.0), (90.0, 0.0), (91.0, 0.0), (0.0, 181.0)],
)
def test_the_open_sea_the_ice_and_no_position_have_no_place(
    latitude: float, longitude: float
) -> None:
    assert MAX_DISTANCE_KM == 50.0
    assert nearest_place(latitude, longitude) is None


# --- the zone -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("latitude", "longitude", "zone"),
    [
        (38.72, -9.14, "Europe/Lisbon"),
        # The border runs down the Rhine.
        (48.5734, 7.7521, "Europe/Paris"),
        (48.5722, 7.8150, "Europe/Berlin"),
        # The open sea: the nautical zone of the longitude (POSIX's sign: west is plus).
        (40.0, -30.0, "Etc/GMT+2"),
        (0.0, 179.9, "Etc/GMT-12"),
        (0.0, -179.9, "Etc/GMT+12"),
        # Either side of the date line, 24 hours apart in summer.
        (-18.14, 178.44, "Pacific/Fiji"),
        (-13.83, -171.76, "Pacific/Apia"),
        (-14.28, -170.70, "Pacific/Pago_Pago"),
    ],
)
def test_the_zone_at_a_known_position(latitude: float, longitude: float, zone: str) -> None:
    assert zone_name_at(latitude, longitude) == zone


def test_no_position_has_no_place_and_no_zone() -> None:
    assert locate(None, None) is NOWHERE
    assert zone_name_at(-91.0, 0.0) is None
    at_sea = locate(40.0, -30.0)
    assert (at_sea.place, at_sea.time_zone) == (None, "Etc/GMT+2")


# --- the zone rule ------------------------------------------------------------------------

WALL_CLOCK = datetime(2024, 7, 14, 23, 30, 5)
"""A summer evening as a camera without OffsetTime wrote it."""


def _times(instant: datetime, local: datetime, source: str | None) -> LocalisedTimes:
    return LocalisedTimes(instant, local, source)  # type: ignore[arg-type]


def test_a_wall_clock_with_a_position_is_read_in_its_zone() -> None:
    times = localise(WALL_CLOCK, is_instant=False, zone="Europe/Lisbon")
    assert times == _times(datetime(2024, 7, 14, 22, 30, 5, tzinfo=UTC), WALL_CLOCK, "position")


def test_a_wall_clock_without_a_position_is_read_as_utc() -> None:
    times = localise(WALL_CLOCK, is_instant=False, zone=None)
    assert times == _times(WALL_CLOCK.replace(tzinfo=UTC), WALL_CLOCK, None)


def test_the_files_own_offset_is_kept_wherever_it_was_taken() -> None:
    shot = WALL_CLOCK.replace(tzinfo=timezone(timedelta(hours=2)))
    times = localise(shot, is_instant=False, zone="Pacific/Apia")
    assert times == _times(shot, WALL_CLOCK, "file")


def test_a_utc_instant_gets_the_local_time_and_day_of_its_position() -> None:
    """A phone's video: only ``creation_time``, in UTC. Near midnight its UTC date is
    not its local date."""
    instant = datetime(2024, 7, 14, 23, 30, 5, tzinfo=UTC)
    in_lisbon = localise(instant, is_instant=True, zone="Europe/Lisbon")
    assert in_lisbon == _times(instant, datetime(2024, 7, 15, 0, 30, 5), "position")
    in_new_york = localise(instant, is_instant=True, zone="America/New_York")
    assert in_new_york.local == datetime(2024, 7, 14, 19, 30, 5)


def test_the_same_instant_falls_on_two_days_either_side_of_the_date_line() -> None:
    instant = datetime(2024, 7, 14, 22, 30, tzinfo=UTC)
    samoa = localise(instant, is_instant=True, zone=zone_name_at(-13.83, -171.76))
    american_samoa = localise(instant, is_instant=True, zone=zone_name_at(-14.28, -170.70))
    assert samoa.local == datetime(2024, 7, 15, 11, 30)
    assert american_samoa.local == datetime(2024, 7, 14, 11, 30)
    fiji = localise(datetime(2024, 7, 15, 9, 0), is_instant=False, zone="Pacific/Fiji")
    assert fiji.instant == datetime(2024, 7, 14, 21, 0, tzinfo=UTC)


def test_a_utc_instant_without_a_position_keeps_its_utc_wall_clock() -> None:
    instant = datetime(2024, 7, 14, 23, 30, 5, tzinfo=UTC)
    times = localise(instant, is_instant=True, zone=None)
    assert times == _times(instant, datetime(2024, 7, 14, 23, 30, 5), "file")


def test_an_ambiguous_wall_clock_is_the_first_instant_and_a_skipped_one_the_offset_before() -> None:
    turned_back = localise(datetime(2023, 10, 29, 1, 30), is_instant=False, zone="Europe/Lisbon")
    assert turned_back.instant == datetime(2023, 10, 29, 0, 30, tzinfo=UTC)  # still +01:00
    skipped = localise(datetime(2024, 3, 31, 1, 30), is_instant=False, zone="Europe/Lisbon")
    assert skipped.instant == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)  # +00:00, before


# --- the rule applied to rows of before it -------------------------------------------------

AS_UTC = WALL_CLOCK.replace(tzinfo=UTC)
"""A row of before the rule: a wall clock, or an instant, stored with a zero offset."""


@pytest.mark.parametrize("source", ["exif", "xmp", "iptc", "maker", "modified", "sidecar"])
def test_a_catalogued_zero_offset_of_a_photos_date_is_taken_for_a_wall_clock(source: str) -> None:
    times = relocalise(AS_UTC, WALL_CLOCK, source, "Europe/Lisbon")
    assert times == _times(datetime(2024, 7, 14, 22, 30, 5, tzinfo=UTC), WALL_CLOCK, "position")


@pytest.mark.parametrize("source", ["video", "file"])
def test_a_catalogued_zero_offset_of_a_video_or_the_disk_is_taken_for_an_instant(
    source: str,
) -> None:
    times = relocalise(AS_UTC, WALL_CLOCK, source, "Europe/Lisbon")
    assert times == _times(AS_UTC, datetime(2024, 7, 15, 0, 30, 5), "position")


def test_a_catalogued_png_date_and_a_row_without_a_zone_are_left_alone() -> None:
    assert relocalise(AS_UTC, WALL_CLOCK, "png", "Europe/Lisbon") == _times(
        AS_UTC, WALL_CLOCK, None
    )
    assert relocalise(AS_UTC, WALL_CLOCK, "exif", None) == _times(AS_UTC, WALL_CLOCK, None)


def test_a_catalogued_offset_came_from_the_file_and_is_kept() -> None:
    instant = datetime(2024, 7, 14, 21, 30, 5, tzinfo=UTC)  # the wall clock at +02:00
    times = relocalise(instant, WALL_CLOCK, "exif", "Pacific/Apia")
    assert times == _times(instant, WALL_CLOCK, "file")
