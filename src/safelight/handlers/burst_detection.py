"""``burst_detection`` (scoped): group a config's photos into bursts and pair Live Photos.

Idempotent: the grouping is a pure function of the config's live assets and their
thumbnails, burst keys derive from what groups them, and the writes converge the
database on that grouping (upsert the bursts found, take every other asset out of its
burst, delete bursts no longer found). A rerun over the same library changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row

from safelight.handlers.contract import HandlerContext, config_id_of, stop_if_cancelled
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.assets import QUERIES
from safelight.library.bursts import Burst, Photo, choose_primary, group_bursts, sharpness
from safelight.library.errors import PathOutsideRoot
from safelight.library.livephotos import Capture, pair_live_photos
from safelight.library.paths import confined
from safelight.work.kinds import Scope


async def run_burst_detection(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    async with services.pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES["burst_candidates"], {"config_id": config_id})
        rows = await cur.fetchall()
        await cur.execute(QUERIES["livephoto_candidates"], {"config_id": config_id})
        capture_rows = await cur.fetchall()
    photos = [
        Photo(
            id=r["id"],
            file_path=r["file_path"],
            captured_at=r["captured_at"],
            captured_at_source=r["captured_at_source"],
            camera_make=r["camera_make"],
            camera_model=r["camera_model"],
            maker_burst_id=r["maker_burst_id"],
            sequence_number=r["sequence_number"],
        )
        for r in rows
    ]
    thumbnails = {r["id"]: r["thumbnail"] for r in rows if r["thumbnail"]}
    bursts = group_bursts(photos)
    stop_if_cancelled(ctx)
    primaries = await _primaries(ctx, services, bursts, thumbnails)
    stop_if_cancelled(ctx)
    await _write_bursts(ctx, config_id, bursts, primaries)

    captures = [
        Capture(
            id=r["id"],
            file_path=r["file_path"],
            media_type=r["media_type"],
            captured_at=r["captured_at"],
            captured_local=r["captured_local"],
            content_identifier=r["content_identifier"],
        )
        for r in capture_rows
    ]
    pairs = pair_live_photos(captures)
    stop_if_cancelled(ctx)
    async with ctx.fenced() as conn:
        await conn.execute(
            QUERIES["assets_clear_pair_except"], {"config_id": config_id, "keep": list(pairs)}
        )
        for image_id, video_id in sorted(pairs.items()):
            await conn.execute(
                QUERIES["asset_set_pair"],
                {"config_id": config_id, "image_id": image_id, "video_id": video_id},
            )
    return {
        "bursts": len(bursts),
        "burst_assets": sum(len(b.asset_ids) for b in bursts),
        "live_photos": len(pairs),
    }


BURST_DETECTION = Kind("burst_detection", Scope.REQUIRED, run_burst_detection)


async def _primaries(
    ctx: HandlerContext, services: Services, bursts: list[Burst], thumbnails: dict[int, str]
) -> dict[str, int]:
    root = services.settings.proxies
    limit = asyncio.Semaphore(services.settings.max_concurrent_files)

    async def measure(asset_id: int) -> tuple[int, float | None]:
        relative = thumbnails.get(asset_id)
        if relative is None:
            return asset_id, None
        try:
            path = confined(root, relative)
        except PathOutsideRoot:
            return asset_id, None
        async with limit:
            return asset_id, await asyncio.to_thread(sharpness, path)

    primaries: dict[str, int] = {}
    for burst in bursts:
        stop_if_cancelled(ctx)
        scores = dict(await asyncio.gather(*(measure(i) for i in burst.asset_ids)))
        primaries[burst.key] = choose_primary(burst, scores)
    return primaries


async def _write_bursts(
    ctx: HandlerContext, config_id: UUID, bursts: list[Burst], primaries: dict[str, int]
) -> None:
    members = [asset_id for burst in bursts for asset_id in burst.asset_ids]
    now = ctx.clock.now()
    async with ctx.fenced() as conn:
        await conn.execute(
            QUERIES["assets_clear_burst_except"], {"config_id": config_id, "keep": members}
        )
        for burst in bursts:
            cur = await conn.execute(
                QUERIES["burst_upsert"],
                {
                    "config_id": config_id,
                    "burst_key": burst.key,
                    "primary_asset_id": primaries[burst.key],
                    "now": now,
                },
            )
            row = await cur.fetchone()
            assert row is not None  # an upsert with DO UPDATE always returns its row
            await conn.execute(
                QUERIES["assets_set_burst"],
                {"config_id": config_id, "burst_id": row[0], "ids": list(burst.asset_ids)},
            )
        await conn.execute(
            QUERIES["bursts_delete_except"],
            {"config_id": config_id, "keep": [b.key for b in bursts]},
        )
