"""The asset repository: a config's assets, the files that duplicate them and the files
a crawl could not read, on a given connection.

Writes take the connection of the caller's fenced transaction (``ctx.fenced()``), so an
attempt that lost its item writes nothing; reads may take any pooled connection. Every
query is a named block of ``assets.sql``, read only here; nothing here builds SQL. An
asset's proxy rows are ``proxies``'s, written with it in the same transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from safelight.core.sql import load_queries
from safelight.library.catalogue.proxies import ProxyRecord, delete_of_asset_types, insert_proxies
from safelight.library.files.mediatypes import MediaType
from safelight.library.media.sidecars import SidecarFile

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "assets.sql")

Conn = psycopg.AsyncConnection[Any]


@dataclass(frozen=True, slots=True)
class KnownAsset:
    """What a crawl keeps in memory of one live asset."""

    id: int
    file_path: str
    content_hash: str
    size_bytes: int
    modified_ns: int
    media_type: MediaType
    sidecar: SidecarFile | None = None
    """The XMP sidecar its metadata was read with, as it was then; None: none."""


@dataclass(frozen=True, slots=True)
class NewAsset:
    """Everything a new asset row holds (its id and timestamps come from the insert)."""

    file_path: str
    file_name: str
    content_hash: str
    size_bytes: int
    modified_at: datetime
    modified_ns: int
    media_type: MediaType
    captured_at: datetime
    captured_local: datetime
    captured_at_source: str
    camera_make: str | None = None
    camera_model: str | None = None
    width: int | None = None
    height: int | None = None
    orientation: int | None = None
    duration_seconds: float | None = None
    maker_burst_id: str | None = None
    content_identifier: str | None = None
    sequence_number: int | None = None
    latitude: float | None = None
    longitude: float | None = None
    altitude_m: float | None = None
    motion_photo: bool = False
    """A still with its motion video inside the file, made into its web_video proxy."""
    motion_photo_issue: str | None = None
    """Why a still that claims a motion video is shown as a still (library.media.motionphotos)."""
    sidecar: SidecarFile | None = None
    """The XMP sidecar read with its metadata (``sidecars.read_sidecar``)."""
    misnamed: str | None = None
    """Its extension names another format than its content ("holds a JPEG, named .nef")."""
    cut_short: str | None = None
    """It was cut short and decoded as far as it goes (the note saying so)."""
    zone_source: str | None = None
    """Where the offset between the two capture times came from (``places.localtimes``)."""
    time_zone: str | None = None
    """The IANA zone at its position; None without one."""
    place_city: str | None = None
    place_region: str | None = None
    place_country: str | None = None
    place_country_code: str | None = None
    """The GeoNames place nearest its position (``places.placenames``); None without one."""
    places_checked: bool = False
    """Its position was looked up (``assets.places_checked_at`` is set): it has one."""

    @property
    def read_note(self) -> str | None:
        """What the crawl noticed reading it (``assets.read_note``): its notes, or None."""
        notes = [note for note in (self.misnamed, self.cut_short) if note is not None]
        return "; ".join(notes) if notes else None


KnownRow = tuple[str, int, int, str | None, int | None, int | None, int, str, MediaType]
"""A row of the crawl's queries of live assets (``assets_live_*``): the asset's path,
size and mtime (ns), its sidecar's path, size and mtime (NULLs: none), which are the
``decisions.StatKey`` the walk gives out for a file, then its id, content hash and type."""

LIVE_AFTER_PATH = QUERIES["assets_live_of_config_after_path"]
"""A page of a config's live assets after a path, in path order, as ``KnownRow``."""
LIVE_IN_RANGE = QUERIES["assets_live_of_config_in_range"]
"""The same, after a path and up to another."""
LIVE_DIGEST_IN_RANGE = QUERIES["assets_live_of_config_digest_in_range"]
"""The count and digest of a config's live assets after a path and up to another."""


def known_asset(row: KnownRow) -> KnownAsset:
    path, size, mtime_ns, sidecar_path, sidecar_size, sidecar_mtime_ns = row[:6]
    asset_id, content, kind = row[6:]
    sidecar = None
    if sidecar_path is not None:
        assert sidecar_size is not None and sidecar_mtime_ns is not None, "the schema's rule"
        sidecar = SidecarFile(sidecar_path, sidecar_size, sidecar_mtime_ns)
    return KnownAsset(asset_id, path, content, size, mtime_ns, kind, sidecar)


def _capture_params(asset: NewAsset) -> dict[str, Any]:
    """The capture time's columns: the instant, the wall-clock time as shot (a timestamp
    without time zone) and its year, month and day, which On this day's index reads."""
    local = asset.captured_local
    return {
        "captured_at": asset.captured_at,
        "captured_local": local.replace(tzinfo=None),
        "captured_at_source": asset.captured_at_source,
        "captured_year": local.year,
        "captured_month": local.month,
        "captured_day": local.day,
        "zone_source": asset.zone_source,
    }


def _place_params(asset: NewAsset, now: datetime) -> dict[str, Any]:
    """Where it was taken: the place and zone of its position, and when they were looked
    up (NULL without a position: nothing to look up, and no fill picks it)."""
    return {
        "time_zone": asset.time_zone,
        "place_city": asset.place_city,
        "place_region": asset.place_region,
        "place_country": asset.place_country,
        "place_country_code": asset.place_country_code,
        "places_checked_at": now if asset.places_checked else None,
    }


def _sidecar_params(sidecar: SidecarFile | None) -> dict[str, Any]:
    return {
        "sidecar_path": sidecar.path if sidecar else None,
        "sidecar_size": sidecar.size if sidecar else None,
        "sidecar_modified_ns": sidecar.mtime_ns if sidecar else None,
    }


async def live_after_path(
    conn: Conn, config_id: UUID, after: str, upto: str | None, limit: int
) -> list[KnownRow]:
    """Up to ``limit`` of the config's live assets after the path ``after`` and up to
    ``upto`` (None: to the last), in path order (``LIVE_AFTER_PATH``, ``LIVE_IN_RANGE``).
    Read in binary: a crawl may read one row per file of the library."""
    cur = conn.cursor(binary=True)
    params = {"config_id": config_id, "after": after, "upto": upto, "limit": limit}
    await cur.execute(LIVE_AFTER_PATH if upto is None else LIVE_IN_RANGE, params)
    return await cur.fetchall()


async def live_digest_in_range(
    conn: Conn, config_id: UUID, after: str, upto: str
) -> tuple[int, bytes]:
    """How many live assets of the config lie after ``after`` and up to ``upto``, and
    the digest of their keys (``library.walk.matching.stat_keys_digest`` of the same keys)."""
    cur = conn.cursor(binary=True)
    params = {"config_id": config_id, "after": after, "upto": upto}
    await cur.execute(LIVE_DIGEST_IN_RANGE, params)
    row = await cur.fetchone()
    assert row is not None  # an aggregate without GROUP BY always has its one row
    return row[0], bytes(row[1])


async def live_at_paths(conn: Conn, config_id: UUID, paths: Iterable[str]) -> list[KnownAsset]:
    paths = sorted(paths)
    if not paths:
        return []
    cur = await conn.execute(
        QUERIES["assets_live_at_paths"], {"config_id": config_id, "paths": paths}
    )
    return [known_asset(row) for row in await cur.fetchall()]


async def live_at_path(conn: Conn, config_id: UUID, path: str) -> KnownAsset | None:
    found = await live_at_paths(conn, config_id, [path])
    return found[0] if found else None


async def live_at_path_and_with_content(
    conn: Conn, config_id: UUID, path: str, content_hash: str
) -> tuple[KnownAsset | None, KnownAsset | None]:
    """The live asset at ``path`` and the one with ``content_hash`` (the same, if both)."""
    cur = await conn.execute(
        QUERIES["assets_live_at_path_or_with_content"],
        {"config_id": config_id, "path": path, "content_hash": content_hash},
    )
    found = [known_asset(row) for row in await cur.fetchall()]
    at_path = next((a for a in found if a.file_path == path), None)
    with_content = next((a for a in found if a.content_hash == content_hash), None)
    return at_path, with_content


async def insert_asset(
    conn: Conn, config_id: UUID, asset: NewAsset, proxies: Sequence[ProxyRecord], now: datetime
) -> int:
    """Insert a live asset and its proxy rows; return its id. Same transaction as the caller."""
    params: dict[str, Any] = {
        "config_id": config_id,
        "file_path": asset.file_path,
        "file_name": asset.file_name,
        "content_hash": asset.content_hash,
        "size_bytes": asset.size_bytes,
        "modified_at": asset.modified_at,
        "modified_ns": asset.modified_ns,
        "media_type": asset.media_type,
        **_capture_params(asset),
        "camera_make": asset.camera_make,
        "camera_model": asset.camera_model,
        "width": asset.width,
        "height": asset.height,
        "orientation": asset.orientation,
        "duration_seconds": asset.duration_seconds,
        "maker_burst_id": asset.maker_burst_id,
        "content_identifier": asset.content_identifier,
        "sequence_number": asset.sequence_number,
        "latitude": asset.latitude,
        "longitude": asset.longitude,
        "altitude_m": asset.altitude_m,
        "motion_photo": asset.motion_photo,
        "motion_photo_issue": asset.motion_photo_issue,
        **_sidecar_params(asset.sidecar),
        **_place_params(asset, now),
        "now": now,
        "read_note": asset.read_note,
    }
    cur = await conn.execute(QUERIES["asset_insert"], params)
    row = await cur.fetchone()
    assert row is not None  # an INSERT ... RETURNING without ON CONFLICT returns its row
    asset_id = int(row[0])
    await insert_proxies(conn, asset_id, proxies, now)
    return asset_id


@dataclass(frozen=True, slots=True)
class ShownAs:
    """How a photo asset is shown: what its proxies were made by."""

    orientation: int | None
    width: int | None
    height: int | None


async def shown_as(conn: Conn, config_id: UUID, asset_id: int) -> ShownAs | None:
    """The orientation and displayed size a live asset is stored with; None: not live."""
    cur = await conn.execute(QUERIES["asset_shown_as"], {"id": asset_id, "config_id": config_id})
    row = await cur.fetchone()
    return ShownAs(*row) if row is not None else None


async def update_read_again(
    conn: Conn,
    config_id: UUID,
    asset_id: int,
    asset: NewAsset,
    proxies: Sequence[ProxyRecord] | None,
    now: datetime,
) -> list[str] | None:
    """Update a live asset read again in place (its sidecar changed): its capture time,
    zone, place, orientation, displayed size and sidecar from ``asset``; with ``proxies``, its
    thumbnail, preview and BlurHash rows replaced by them (any other proxy, a motion
    photo's web video, stays). Returns the paths the replaced rows named (to delete once
    no row names them), or None if the asset is not live. The caller's transaction."""
    cur = await conn.execute(
        QUERIES["asset_update_read_again"],
        {
            "id": asset_id,
            "config_id": config_id,
            **_capture_params(asset),
            "orientation": asset.orientation,
            "width": asset.width,
            "height": asset.height,
            **_sidecar_params(asset.sidecar),
            **_place_params(asset, now),
            "now": now,
        },
    )
    if await cur.fetchone() is None:
        return None
    if proxies is None:
        return []
    old = await delete_of_asset_types(conn, asset_id, {p.proxy_type for p in proxies})
    await insert_proxies(conn, asset_id, proxies, now)
    return old


async def move_asset(
    conn: Conn,
    config_id: UUID,
    asset_id: int,
    *,
    file_path: str,
    file_name: str,
    size_bytes: int,
    modified_at: datetime,
    modified_ns: int,
    now: datetime,
) -> bool:
    """Point a live asset at its file's new path (or new stat); False if it is not live."""
    cur = await conn.execute(
        QUERIES["asset_move"],
        {
            "id": asset_id,
            "config_id": config_id,
            "file_path": file_path,
            "file_name": file_name,
            "size_bytes": size_bytes,
            "modified_at": modified_at,
            "modified_ns": modified_ns,
            "now": now,
        },
    )
    return await cur.fetchone() is not None


async def soft_delete(conn: Conn, config_id: UUID, ids: Sequence[int], now: datetime) -> int:
    if not ids:
        return 0
    params = {"config_id": config_id, "ids": list(ids), "now": now}
    cur = await conn.execute(QUERIES["asset_soft_delete"], params)
    # The files that duplicated a gone asset are no longer named as its copies (the
    # next crawl ingests one of them, or moves the asset to it).
    await conn.execute(QUERIES["duplicates_delete_of_assets"], params)
    return cur.rowcount


async def record_duplicates(
    conn: Conn, config_id: UUID, duplicates: Mapping[str, int], now: datetime
) -> None:
    """Record each path (a file with the same bytes as a live asset) with that asset's id."""
    if duplicates:
        paths = sorted(duplicates)
        await conn.execute(
            QUERIES["duplicates_upsert"],
            {
                "config_id": config_id,
                "paths": paths,
                "asset_ids": [duplicates[p] for p in paths],
                "now": now,
            },
        )


async def duplicate_paths(conn: Conn, config_id: UUID) -> set[str]:
    cur = await conn.execute(QUERIES["duplicate_paths_of_config"], {"config_id": config_id})
    return {row[0] for row in await cur.fetchall()}


async def forget_duplicates(conn: Conn, config_id: UUID, paths: Iterable[str]) -> None:
    paths = sorted(paths)
    if paths:
        await conn.execute(
            QUERIES["duplicates_delete_by_path"], {"config_id": config_id, "paths": paths}
        )


async def counts_by_type(conn: Conn, config_id: UUID) -> dict[str, int]:
    cur = await conn.execute(QUERIES["asset_counts_by_type"], {"config_id": config_id})
    counts = {"image": 0, "video": 0}
    for media_type, n in await cur.fetchall():
        counts[media_type] = int(n)
    return counts


@dataclass(frozen=True, slots=True)
class FailedFile:
    """A file a crawl could not ingest, as recorded (``asset_errors``): why, how many
    crawls it failed, the file as it was then (None: not known, e.g. a row of before
    migration 0021) and the earliest time a crawl reads it again unchanged."""

    path: str
    reason: str
    failures: int
    size: int | None
    modified_ns: int | None
    inode: int | None
    retry_after: datetime | None


@dataclass(frozen=True, slots=True)
class FileVersion:
    """The file as it was when it failed: its size, mtime (ns) and inode."""

    size: int
    modified_ns: int
    inode: int | None


async def record_error(
    conn: Conn,
    config_id: UUID,
    file_path: str,
    reason: str,
    now: datetime,
    version: FileVersion | None = None,
    retry_after: datetime | None = None,
) -> None:
    await conn.execute(
        QUERIES["asset_error_upsert"],
        {
            "config_id": config_id,
            "file_path": file_path,
            "reason": reason,
            "now": now,
            "size": None if version is None else version.size,
            "modified_ns": None if version is None else version.modified_ns,
            "inode": None if version is None else version.inode,
            "retry_after": retry_after,
        },
    )


async def clear_errors(conn: Conn, config_id: UUID, paths: Iterable[str]) -> None:
    paths = list(paths)
    if paths:
        await conn.execute(QUERIES["asset_errors_clear"], {"config_id": config_id, "paths": paths})


async def failed_files(conn: Conn, config_id: UUID) -> dict[str, FailedFile]:
    """Every recorded error of a config, by path (a crawl holds them: one row a failed
    file, which a library has few of beside its assets)."""
    cur = await conn.execute(QUERIES["asset_errors_of_config_for_crawl"], {"config_id": config_id})
    return {row[0]: FailedFile(*row) for row in await cur.fetchall()}


async def errors_due_now(conn: Conn, config_id: UUID, now: datetime) -> int:
    """Make every failed file of a config due again at ``now``: the next crawl reads each
    one, changed or not. How many were waiting."""
    return (await errors_made_due(conn, config_id, now)).made


@dataclass(frozen=True, slots=True)
class MadeDue:
    """What asking for failed files again found: how many matched, and how many of those
    were waiting (the others were due already)."""

    matched: int
    made: int


async def errors_made_due(
    conn: Conn,
    config_id: UUID,
    now: datetime,
    *,
    reason: str | None = None,
    path: str | None = None,
) -> MadeDue:
    """Make the failed files of a config due again at ``now``: all of them, those of one
    ``reason``, or the one ``path`` (relative to the config's root). The next crawl reads
    each one, changed or not (ADR 0057, 0058)."""
    cur = await conn.execute(
        QUERIES["asset_errors_due_now"],
        {"config_id": config_id, "now": now, "reason": reason, "path": path},
    )
    row = await cur.fetchone()
    assert row is not None  # one row, always
    return MadeDue(int(row[0]), int(row[1]))


async def errors_of_config(conn: Conn, config_id: UUID) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["asset_errors_of_config"], {"config_id": config_id})
    return list(await cur.fetchall())


async def deleted_of_config(conn: Conn, config_id: UUID) -> list[int]:
    """The ids of the config's soft-deleted assets, for the purge."""
    cur = await conn.execute(QUERIES["assets_deleted_of_config"], {"config_id": config_id})
    return [int(row[0]) for row in await cur.fetchall()]


async def lock_deleted(conn: Conn, config_id: UUID, asset_id: int) -> str | None:
    """Lock the asset's row if it is still a soft-deleted asset of the config, in the
    caller's transaction; its content hash, or None if it is not (any more)."""
    cur = await conn.execute(
        QUERIES["asset_lock_deleted"], {"id": asset_id, "config_id": config_id}
    )
    row = await cur.fetchone()
    return None if row is None else str(row[1])


async def delete_asset(conn: Conn, asset_id: int) -> None:
    """Delete the asset's row (its proxy rows first: ``proxies.delete_by_id``)."""
    await conn.execute(QUERIES["asset_delete"], {"id": asset_id})


async def configs_of(conn: Conn, asset_ids: Sequence[int]) -> dict[int, UUID]:
    """The storage config of each of these assets that exists."""
    cur = await conn.execute(QUERIES["assets_config_of"], {"asset_ids": list(asset_ids)})
    return {int(row[0]): row[1] for row in await cur.fetchall()}
