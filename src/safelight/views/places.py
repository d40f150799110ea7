"""A place as it is shown (the dashboard's On this day, its preview, ``safelight
assets``): ``Lisbon, Portugal``, from the GeoNames place the catalogue holds for an
asset with a position (``assets.place_*``, ADR 0065). An asset without a position, or
far from any place, is shown with none."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PLACES_PER_YEAR = 3
"""How many of a year's places On this day names, most photographed first: the line
under a year stays one line."""

PLACE_SEPARATOR = " · "


def place_text(city: str | None, country: str | None, country_code: str | None) -> str | None:
    """``Lisbon, Portugal``; the ISO code where the data names no country; None without
    a place."""
    if city is None:
        return None
    where = country or country_code
    return f"{city}, {where}" if where else city


def place_of(row: Mapping[str, Any]) -> dict[str, Any] | None:
    """An asset row's place as the API gives it (None without one)."""
    if row.get("place_city") is None:
        return None
    return {
        "city": row["place_city"],
        "region": row.get("place_region"),
        "country": row.get("place_country"),
        "country_code": row.get("place_country_code"),
    }


def places_line(places: Iterable[str]) -> str | None:
    """A year's places, most photographed first: ``Lisbon, Portugal · Sintra, Portugal``;
    None for none."""
    shown = list(places)
    return PLACE_SEPARATOR.join(shown) if shown else None
