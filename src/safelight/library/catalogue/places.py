"""Where a config's assets were taken, for the place fill (``handlers.place_fill``): the
live assets with a position whose place was never looked up (rows catalogued before
migration 0023), and the place, zone and capture times found for them (by
``library.places``, which the handler asks: the catalogue stands below it).

The crawl writes the same columns for each asset it reads (``assets.insert_asset``).
Writes take the caller's fenced transaction; every query is a named block of
``places.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from safelight.core.sql import load_queries

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "places.sql")

Conn = psycopg.AsyncConnection[Any]


@dataclass(frozen=True, slots=True)
class Unchecked:
    """An asset whose position was never looked up, as catalogued."""

    id: int
    latitude: float
    longitude: float
    captured_at: datetime
    captured_local: datetime
    captured_at_source: str
    zone_source: str | None


@dataclass(frozen=True, slots=True)
class PlaceRow:
    """What its position says of an asset (``library.places``): its place (None
    columns: no place near), zone, and capture times by the zone rule; with the
    position it was looked up for."""

    id: int
    latitude: float
    longitude: float
    city: str | None
    region: str | None
    country: str | None
    country_code: str | None
    time_zone: str | None
    zone_source: str | None
    captured_at: datetime
    captured_local: datetime


async def unchecked(conn: Conn, config_id: UUID, after: int, limit: int) -> list[Unchecked]:
    """Up to ``limit`` of the config's unchecked assets with a position, after the id
    ``after``, in id order."""
    cur = await conn.execute(
        QUERIES["assets_places_unchecked"],
        {"config_id": config_id, "after": after, "limit": limit},
    )
    return [Unchecked(*row) for row in await cur.fetchall()]


async def any_unchecked(conn: Conn, config_id: UUID) -> bool:
    """Whether the config has a live asset with a position never looked up."""
    cur = await conn.execute(QUERIES["assets_places_unchecked_exist"], {"config_id": config_id})
    row = await cur.fetchone()
    assert row is not None  # EXISTS always has its one row
    return bool(row[0])


async def write_places(
    conn: Conn, config_id: UUID, rows: Sequence[PlaceRow], now: datetime
) -> set[int]:
    """Write what was found, in the caller's fenced transaction, for the assets still
    live, unchecked and at the same position; the ids written."""
    if not rows:
        return set()
    cur = await conn.execute(
        QUERIES["assets_set_places"],
        {
            "config_id": config_id,
            "now": now,
            "ids": [r.id for r in rows],
            "latitudes": [r.latitude for r in rows],
            "longitudes": [r.longitude for r in rows],
            "cities": [r.city for r in rows],
            "regions": [r.region for r in rows],
            "countries": [r.country for r in rows],
            "country_codes": [r.country_code for r in rows],
            "time_zones": [r.time_zone for r in rows],
            "zone_sources": [r.zone_source for r in rows],
            "instants": [r.captured_at for r in rows],
            "locals": [r.captured_local for r in rows],
        },
    )
    return {row[0] for row in await cur.fetchall()}
