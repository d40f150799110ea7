"""``place_fill`` (scoped, light): fill the place and time zone of a config's assets that
have a position but were catalogued before places were looked up (migration 0023), and
apply the zone rule to their capture times as far as the row can tell (ADR 0065,
``places.localtimes.relocalise``).

It reads only the catalogue, never an original, so it is not heavy work. It goes in
batches of ``BATCH`` assets by id (the index of unchecked rows, ix_assets_places_unchecked),
each looked up off the event loop and written in its own short fenced transaction: an
attempt that lost its item writes nothing more, and a stopped one resumes, next time,
where it left off (what it wrote is no longer unchecked). Idempotent: a row is written
once, while still unchecked and at the position it was looked up for; a rerun finds
nothing to do. A crawl queues it when it leaves such rows behind (``crawl.run``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from safelight.handlers.contract import HandlerContext, config_id_of, stop_if_cancelled
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import places
from safelight.library.catalogue.places import PlaceRow, Unchecked
from safelight.library.places.localtimes import relocalise
from safelight.library.places.located import locate
from safelight.work.kinds import Scope

BATCH = 500
"""Assets looked up and written per fenced transaction (a few milliseconds of lookups)."""


async def run_place_fill(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    after = checked = placed = retimed = 0
    while True:
        stop_if_cancelled(ctx)
        async with services.pool.connection() as conn:
            batch = await places.unchecked(conn, config_id, after, BATCH)
        if not batch:
            break
        rows = await asyncio.to_thread(look_up, batch)
        stop_if_cancelled(ctx)
        async with ctx.fenced() as conn:
            written = await places.write_places(conn, config_id, rows, ctx.clock.now())
        for row, asset in zip(rows, batch, strict=True):
            if row.id in written:
                checked += 1
                placed += row.city is not None
                retimed += (row.captured_at, row.captured_local) != (
                    asset.captured_at,
                    asset.captured_local,
                )
        after = batch[-1].id
        ctx.progress(checked=checked, placed=placed, retimed=retimed)
    return {"checked": checked, "placed": placed, "retimed": retimed}


def look_up(batch: list[Unchecked]) -> list[PlaceRow]:
    """The place, zone and capture times of each asset (blocking: the first lookup of a
    process reads the places)."""
    return [place_row(asset) for asset in batch]


def place_row(asset: Unchecked) -> PlaceRow:
    located = locate(asset.latitude, asset.longitude)
    if asset.zone_source is not None:  # the rule was applied when it was read
        captured_at, captured_local = asset.captured_at, asset.captured_local
        zone_source: str | None = asset.zone_source
    else:
        times = relocalise(
            asset.captured_at, asset.captured_local, asset.captured_at_source, located.time_zone
        )
        captured_at, captured_local, zone_source = times.instant, times.local, times.zone_source
    place = located.place
    return PlaceRow(
        id=asset.id,
        latitude=asset.latitude,
        longitude=asset.longitude,
        city=place.city if place else None,
        region=place.region if place else None,
        country=place.country if place else None,
        country_code=place.country_code if place else None,
        time_zone=located.time_zone,
        zone_source=zone_source,
        captured_at=captured_at,
        captured_local=captured_local,
    )


PLACE_FILL = Kind("place_fill", Scope.REQUIRED, run_place_fill)
