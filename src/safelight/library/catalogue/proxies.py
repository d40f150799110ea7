"""The proxy rows of the assets: which files under the proxy root (and which BlurHash
values) each asset's proxies are, on a given connection.

A row is the one word on which file an asset's proxy is (the layout's names carry the
attempt that wrote them, ADR 0016): a file is deleted only once no row names it
(``paths_named``). Writes take the caller's fenced transaction. Every query is a named
block of ``proxies.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg

from safelight.core.sql import load_queries

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "proxies.sql")

Conn = psycopg.AsyncConnection[Any]

ProxyRow = tuple[int, str, str | None]
"""A proxy row as the deletes read it: its id, type and path (None: a BlurHash)."""


@dataclass(frozen=True, slots=True)
class ProxyRecord:
    """One proxy of an asset: a file (``path`` relative to the proxy root) or a BlurHash."""

    proxy_type: str
    path: str | None
    value: str | None = None
    size_bytes: int | None = None
    width: int | None = None
    height: int | None = None
    picture_hash: int | None = None
    """A thumbnail's picture hash (``grouping.fingerprints``, 64 bits unsigned), taken
    where it was made; None for other proxies, and for a thumbnail nobody hashed."""


HASH_BITS = 64


def picture_hash_to_bigint(value: int) -> int:
    """A 64-bit picture hash as PostgreSQL's signed bigint stores it (two's complement)."""
    if not 0 <= value < 1 << HASH_BITS:
        raise ValueError(f"not a 64-bit picture hash: {value}")
    return value - (1 << HASH_BITS) if value >= 1 << (HASH_BITS - 1) else value


def picture_hash_from_bigint(stored: int) -> int:
    """The 64-bit picture hash a bigint holds (the inverse of ``picture_hash_to_bigint``)."""
    return stored & ((1 << HASH_BITS) - 1)


async def insert_proxies(
    conn: Conn, asset_id: int, proxies: Sequence[ProxyRecord], now: datetime
) -> None:
    """Insert the asset's proxy rows. A thumbnail's row also sets the asset's picture
    hash to its own (or back to "not hashed" when it has none), so the stored hash is
    always of the thumbnail the asset has."""
    for proxy in proxies:
        if proxy.proxy_type == "thumbnail":
            await set_picture_hash(conn, asset_id, proxy.picture_hash, now)
        await conn.execute(
            QUERIES["proxy_insert"],
            {
                "asset_id": asset_id,
                "proxy_type": proxy.proxy_type,
                "path": proxy.path,
                "value": proxy.value,
                "size_bytes": proxy.size_bytes,
                "width": proxy.width,
                "height": proxy.height,
                "now": now,
            },
        )


async def set_picture_hash(
    conn: Conn, asset_id: int, picture_hash: int | None, now: datetime | None
) -> None:
    """Store an asset's picture hash, hashed at ``now``; None and None: not hashed yet
    (the burst_detection handler hashes it from its stored thumbnail); None at ``now``:
    tried, its thumbnail could not be read."""
    await conn.execute(
        QUERIES["asset_set_picture_hash"],
        {
            "asset_id": asset_id,
            "picture_hash": None if picture_hash is None else picture_hash_to_bigint(picture_hash),
            "now": now,
        },
    )


async def delete_of_asset_types(
    conn: Conn, asset_id: int, proxy_types: Collection[str]
) -> list[str]:
    """Delete the asset's proxy rows of these types; the paths they named."""
    cur = await conn.execute(
        QUERIES["proxies_delete_of_asset_types"],
        {"asset_id": asset_id, "proxy_types": sorted(proxy_types)},
    )
    return [row[0] for row in await cur.fetchall() if row[0] is not None]


async def of_asset(conn: Conn, asset_id: int) -> list[ProxyRow]:
    cur = await conn.execute(QUERIES["proxies_of_asset"], {"asset_id": asset_id})
    return list(await cur.fetchall())


async def of_assets(conn: Conn, asset_ids: Sequence[int]) -> list[ProxyRow]:
    cur = await conn.execute(QUERIES["proxies_of_assets"], {"asset_ids": list(asset_ids)})
    return list(await cur.fetchall())


async def delete_by_id(conn: Conn, ids: Sequence[int]) -> None:
    await conn.execute(QUERIES["proxies_delete_by_id"], {"ids": list(ids)})


async def delete_by_path(conn: Conn, paths: Sequence[str]) -> int:
    """Delete every row that names one of these paths; how many rows."""
    cur = await conn.execute(QUERIES["proxies_delete_by_path"], {"paths": list(paths)})
    return cur.rowcount


async def paths_named(conn: Conn, paths: Iterable[str]) -> set[str]:
    """Which of these paths (relative to the proxy root) some proxy row names."""
    cur = await conn.execute(QUERIES["proxy_paths_named"], {"paths": list(paths)})
    return {row[0] for row in await cur.fetchall()}


async def legacy_of_config(
    conn: Conn, config_id: UUID, after: tuple[int, str], limit: int
) -> list[tuple[int, str, str]]:
    """A page of the config's live proxy rows whose path may be a legacy name
    (``<type>.<ext>``), as (asset id, type, path), in (asset id, type) order after
    ``after``."""
    cur = await conn.execute(
        QUERIES["proxies_legacy_of_config"],
        {
            "config_id": config_id,
            "after_asset": after[0],
            "after_type": after[1],
            "limit": limit,
        },
    )
    return list(await cur.fetchall())


async def repoint(
    conn: Conn,
    renamed: Sequence[tuple[int, str, str, str]],
) -> set[str]:
    """Each (asset id, type, old path, new path): the row that still names the old path
    names the new one. Returns the old paths some row stopped naming."""
    cur = await conn.execute(
        QUERIES["proxies_repoint"],
        {
            "asset_ids": [asset_id for asset_id, _, _, _ in renamed],
            "proxy_types": [proxy_type for _, proxy_type, _, _ in renamed],
            "old_paths": [old for _, _, old, _ in renamed],
            "new_paths": [new for _, _, _, new in renamed],
        },
    )
    return {row[0] for row in await cur.fetchall()}


@dataclass(frozen=True, slots=True)
class AssetProxies:
    """A live asset as a remake of its proxies reads it: its original as crawled, and
    its proxy rows by type (path, None for a BlurHash; when the row was made)."""

    asset_id: int
    file_path: str
    content_hash: str
    media_type: str
    motion_photo: bool
    size_bytes: int
    modified_ns: int
    sidecar: tuple[str, int, int] | None
    """Its XMP sidecar as read with it (path, size, mtime in ns); None: none."""
    rows: Mapping[str, tuple[str | None, datetime]]


async def of_live_assets_after_path(
    conn: Conn, config_id: UUID, after_path: str, limit: int
) -> list[AssetProxies]:
    """A page of the config's live assets after ``after_path`` (in byte order of their
    paths), each with its proxy rows."""
    cur = await conn.execute(
        QUERIES["proxies_of_live_assets_of_config_after_path"],
        {"config_id": config_id, "after_path": after_path, "limit": limit},
    )
    page = []
    for row in await cur.fetchall():
        (asset_id, path, content, media, motion, size, mtime_ns, sc_path, sc_size, sc_ns) = row[:10]
        types, paths, made = row[10:]
        sidecar = None
        if sc_path is not None:
            sidecar = (sc_path, int(sc_size), int(sc_ns))
        page.append(
            AssetProxies(
                asset_id,
                path,
                content,
                media,
                bool(motion),
                int(size),
                int(mtime_ns),
                sidecar,
                {t: (p, at) for t, p, at in zip(types, paths, made, strict=True)},
            )
        )
    return page


async def replace_of_asset(
    conn: Conn, asset_id: int, records: Sequence[ProxyRecord], now: datetime
) -> list[str]:
    """Replace the asset's proxy rows of the types of ``records`` with them, in the
    caller's (fenced) transaction; the paths the replaced rows named (to delete once no
    row names them)."""
    old = await delete_of_asset_types(conn, asset_id, {r.proxy_type for r in records})
    await insert_proxies(conn, asset_id, records, now)
    return old
