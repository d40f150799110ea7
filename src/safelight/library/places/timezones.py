"""The IANA time zone at a position: ``timezonefinder``'s polygons of
timezone-boundary-builder (OpenStreetMap's boundaries, ODbL 1.0, shipped in the
``timezonefinder_data`` wheel), so nothing is asked of a server.

On land the zone whose polygon holds the point (``Europe/Paris`` in Strasbourg,
``Europe/Berlin`` across the Rhine in Kehl); at sea the nautical zone of its longitude
(``Etc/GMT+2`` in mid-Atlantic: POSIX's sign, west is plus). The finder is built once
per process, on the first lookup (a fraction of a second: ``bench/places.py``).
"""

from __future__ import annotations

import threading
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from timezonefinder import TimezoneFinder

_finder: TimezoneFinder | None = None
_building = threading.Lock()


def _the_finder() -> TimezoneFinder:
    global _finder
    if _finder is None:
        with _building:
            if _finder is None:
                _finder = TimezoneFinder()
    return _finder


def zone_name_at(latitude: float, longitude: float) -> str | None:
    """The IANA name of the zone at the position; None out of range or where the data
    has no zone and Python's zone database does not know the name the data gives."""
    if not (-90.0 <= latitude <= 90.0 and -180.0 <= longitude <= 180.0):
        return None
    name = _the_finder().timezone_at(lng=longitude, lat=latitude)
    if name is None:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None  # a zone the system's tzdata does not hold yet: no zone, not an error
    return name
