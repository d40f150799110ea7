"""``burst_detection`` (scoped): stack RAWs on the photo of the same capture and other
files of one capture (formats, near-copies) on their original, group a config's photos
into bursts of distinct frames, pair Live Photos, and fold similar shots (ADR 0066,
``similar_shots``: first the thumbnails not hashed yet are hashed, last the groups).

A stacked asset is its primary's other file, not a photo of its own: it is left out of
bursts (a RAW+JPEG pair, or a JPEG and its WebP export, would be a "burst" of two shots
0 s apart) and of Live Photo pairing (its primary pairs). Stored picture hashes are
compared only where names or instants already say "maybe one capture" (ADR 0056).

Idempotent: the grouping is a pure function of the config's live assets and their
thumbnails, burst keys derive from what groups them, and the writes converge the
database on that grouping (upsert the bursts found, take every other asset out of its
burst, delete bursts no longer found). A rerun over the same library changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from safelight.handlers.contract import HandlerContext, config_id_of, stop_if_cancelled
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.handlers.similar_shots import fill_picture_hashes, group_similar_shots
from safelight.library.catalogue import groups
from safelight.library.files.confinement import confined
from safelight.library.files.errors import PathOutsideRoot
from safelight.library.files.mediatypes import is_raw
from safelight.library.grouping.bursts import Burst, Photo, choose_primary, group_bursts, sharpness
from safelight.library.grouping.copies import (
    Shot,
    Stacked,
    all_stacks,
    fingerprints_wanted,
    stack_copies,
)
from safelight.library.grouping.livephotos import Capture, pair_live_photos
from safelight.library.grouping.stacks import stack_raws
from safelight.work.kinds import Scope


async def run_burst_detection(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    hashed = await fill_picture_hashes(ctx, services, config_id)
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
    raws = stack_raws(captures)
    thumbnails = {r["id"]: r["thumbnail"] for r in rows if r["thumbnail"]}
    shots = [
        Shot(
            id=r["id"],
            file_path=r["file_path"],
            captured_at=r["captured_at"],
            captured_at_source=r["captured_at_source"],
            camera_make=r["camera_make"],
            camera_model=r["camera_model"],
        )
        for r in rows
        if r["id"] not in raws and not is_raw(r["file_path"])
    ]
    wanted = fingerprints_wanted(shots)
    prints = {
        r["id"]: r["picture_hash"]
        for r in rows
        if r["id"] in wanted and r["picture_hash"] is not None
    }
    stacks = all_stacks(raws, stack_copies(shots, prints))
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
    bursts = group_bursts(photos, prints)
    stop_if_cancelled(ctx)
    primaries = await _primaries(ctx, services, bursts, thumbnails)
    stop_if_cancelled(ctx)
    await _write_bursts(ctx, config_id, bursts, primaries)

    pairs = pair_live_photos([c for c in captures if c.id not in stacks])
    stop_if_cancelled(ctx)
    async with ctx.fenced() as conn:
        await groups.write_pairs(conn, config_id, pairs)
    similar = await group_similar_shots(ctx, services, config_id)
    return {
        "bursts": len(bursts),
        "burst_assets": sum(len(b.asset_ids) for b in bursts),
        "live_photos": len(pairs),
        "stacks": sum(1 for s in stacks.values() if s.kind == "raw"),
        "copies": sum(1 for s in stacks.values() if s.kind != "raw"),
        "picture_hashes": hashed,
        **similar,
    }


T = TypeVar("T")

BURST_DETECTION = Kind("burst_detection", Scope.REQUIRED, run_burst_detection)


def _thumbnail_reader(
    services: Services, thumbnails: dict[int, str], read: Callable[[Path], T | None]
) -> Callable[[int], Awaitable[T | None]]:
    """``read`` of an asset's thumbnail in a thread, at most ``max_concurrent_files`` at
    once; None without a thumbnail or for one outside the proxy root."""
    root = services.settings.proxies
    limit = asyncio.Semaphore(services.settings.max_concurrent_files)

    async def measure(asset_id: int) -> T | None:
        relative = thumbnails.get(asset_id)
        if relative is None:
            return None
        try:
            path = confined(root, relative)
        except PathOutsideRoot:
            return None
        async with limit:
            return await asyncio.to_thread(read, path)

    return measure


async def _primaries(
    ctx: HandlerContext, services: Services, bursts: list[Burst], thumbnails: dict[int, str]
) -> dict[str, int]:
    measure = _thumbnail_reader(services, thumbnails, sharpness)
    primaries: dict[str, int] = {}
    for burst in bursts:
        stop_if_cancelled(ctx)
        scores = await asyncio.gather(*(measure(i) for i in burst.asset_ids))
        by_id = dict(zip(burst.asset_ids, scores, strict=True))
        primaries[burst.key] = choose_primary(burst, by_id)
    return primaries


async def _write_bursts(
    ctx: HandlerContext, config_id: UUID, bursts: list[Burst], primaries: dict[str, int]
) -> None:
    rows = [(burst.key, primaries[burst.key], burst.asset_ids) for burst in bursts]
    now = ctx.clock.now()
    async with ctx.fenced() as conn:
        await groups.write_bursts(conn, config_id, rows, now)


async def _write_stacks(ctx: HandlerContext, config_id: UUID, stacks: dict[int, Stacked]) -> None:
    rows = {asset_id: (s.primary_id, s.kind) for asset_id, s in stacks.items()}
    async with ctx.fenced() as conn:
        await groups.write_stacks(conn, config_id, rows)
