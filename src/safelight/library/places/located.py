"""What a position says of an asset: the place nearest it and the time zone there."""

from __future__ import annotations

from dataclasses import dataclass

from safelight.library.places.placenames import Place, nearest_place
from safelight.library.places.timezones import zone_name_at


@dataclass(frozen=True, slots=True)
class Located:
    place: Place | None
    """None far from any place (``placenames.MAX_DISTANCE_KM``)."""
    time_zone: str | None
    """The IANA name (``Europe/Lisbon``, ``Etc/GMT+2`` at sea)."""


NOWHERE = Located(None, None)
"""An asset without a position: no place, no zone."""


def locate(latitude: float | None, longitude: float | None) -> Located:
    """The place and zone at a position; ``NOWHERE`` without one. The first call of a
    process reads the data (``placenames.place_index``): call it off the event loop."""
    if latitude is None or longitude is None:
        return NOWHERE
    return Located(nearest_place(latitude, longitude), zone_name_at(latitude, longitude))
