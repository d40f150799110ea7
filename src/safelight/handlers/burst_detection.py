"""``burst_detection`` (scoped): stack RAWs on the photo of the same capture, group a
config's photos into bursts and pair Live Photos.

A stacked RAW is its primary's other file, not a photo of its own: it is left out of
bursts (a RAW+JPEG pair would be a "burst" of two shots 0 s apart) and of Live Photo
pairing (its primary pairs).

Idempotent: the grouping is a pure function of the config's live assets and their
thumbnails, burst keys derive from what groups them, and the writes converge the
database on that grouping (upsert the bursts found, take every other asset out of its
burst, delete bursts no longer found). A rerun over the same library changes nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

from safelight.handlers.contract import HandlerContext, config_id_of, stop_if_cancelled
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import groups
from safelight.library.files.confinement import confined
from safelight.library.files.errors import PathOutsideRoot
from safelight.library.grouping.bursts import Burst, Photo, choose_primary, group_bursts, sharpness
from safelight.library.grouping.livephotos import Capture, pair_live_photos
from safelight.library.grouping.stacks import stack_raws
from safelight.work.kinds import Scope


async def run_burst_detection(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    async with services.pool.connection() as conn:
        rows = await groups.burst_candidates(conn, config_id)
        capture_rows = await groups.livephoto_candidates(conn, config_id)
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
    stacks = stack_raws(captures)
    await _write_stacks(ctx, config_id, stacks)
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
        if r["id"] not in stacks
    ]
    thumbnails = {r["id"]: r["thumbnail"] for r in rows if r["thumbnail"]}
    bursts = group_bursts(photos)
    stop_if_cancelled(ctx)
    primaries = await _primaries(ctx, services, bursts, thumbnails)
    stop_if_cancelled(ctx)
    await _write_bursts(ctx, config_id, bursts, primaries)

    pairs = pair_live_photos([c for c in captures if c.id not in stacks])
    stop_if_cancelled(ctx)
    async with ctx.fenced() as conn:
        await groups.write_pairs(conn, config_id, pairs)
    return {
        "bursts": len(bursts),
        "burst_assets": sum(len(b.asset_ids) for b in bursts),
        "live_photos": len(pairs),
        "stacks": len(stacks),
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
    rows = [(burst.key, primaries[burst.key], burst.asset_ids) for burst in bursts]
    now = ctx.clock.now()
    async with ctx.fenced() as conn:
        await groups.write_bursts(conn, config_id, rows, now)


async def _write_stacks(ctx: HandlerContext, config_id: UUID, stacks: dict[int, int]) -> None:
    async with ctx.fenced() as conn:
        await groups.write_stacks(conn, config_id, stacks)
