"""The groupings of a config's assets: bursts, Live Photo pairs, stacks and similar
shots, as ``grouping`` finds them and ``burst_detection`` writes them.

Each write converges the database on the grouping it is given (take every other asset
out, upsert what was found, delete what no longer is), in the caller's fenced
transaction, so a rerun over the same grouping changes nothing. Every query is a named
block of ``groups.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from safelight.core.sql import load_queries
from safelight.library.catalogue.proxies import picture_hash_from_bigint

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "groups.sql")

Conn = psycopg.AsyncConnection[Any]

BurstRow = tuple[str, int, Sequence[int]]
"""A burst as it is written: its key, its primary asset, its assets."""

SimilarRow = tuple[int | None, int, Sequence[int]]
"""A similar group as it is written: the id of the stored group it continues (None: a
new one), its primary asset, its assets."""


@dataclass(frozen=True)
class _LinkQueries:
    """The queries of one kind of link from an asset to another (a Live Photo pair, a
    stack): ``clear_except`` unlinks every asset not in ``keep``; ``set_one`` links one,
    its two ids bound as ``source`` and ``target`` (and, where the link has one, its
    kind as ``kind``)."""

    clear_except: str
    set_one: str
    source: str
    target: str
    kind: str | None = None


_PAIRS = _LinkQueries(
    QUERIES["assets_clear_pair_except"], QUERIES["asset_set_pair"], "image_id", "video_id"
)
_STACKS = _LinkQueries(
    QUERIES["assets_clear_stack_except"],
    QUERIES["asset_set_stack"],
    "asset_id",
    "primary_id",
    "stack_kind",
)


async def burst_candidates(conn: Conn, config_id: UUID) -> list[dict[str, Any]]:
    """The config's photos that may belong to a burst, with their thumbnail's path and
    their picture hash (unsigned; None where not hashed)."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["burst_candidates"], {"config_id": config_id})
    return [_with_picture_hash(r) for r in await cur.fetchall()]


def _with_picture_hash(row: dict[str, Any]) -> dict[str, Any]:
    stored = row.get("picture_hash")
    return {**row, "picture_hash": None if stored is None else picture_hash_from_bigint(stored)}


async def unhashed(
    conn: Conn, config_id: UUID, after: int, limit: int
) -> list[tuple[int, str | None]]:
    """Up to ``limit`` of the config's live assets after id ``after`` whose thumbnail was
    never hashed, in id order: (id, thumbnail path or None)."""
    cur = await conn.execute(
        QUERIES["assets_unhashed"], {"config_id": config_id, "after": after, "limit": limit}
    )
    return [(int(r[0]), r[1]) for r in await cur.fetchall()]


async def similar_candidates(conn: Conn, config_id: UUID) -> list[dict[str, Any]]:
    """The config's photos that may be similar shots (``similar`` rule), with their
    picture hash (unsigned) and their similar group now."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["similar_candidates"], {"config_id": config_id})
    return [_with_picture_hash(r) for r in await cur.fetchall()]


async def write_similar_groups(
    conn: Conn, config_id: UUID, groups: Sequence[SimilarRow], now: datetime
) -> None:
    """The config's similar groups are exactly ``groups``: each continued or created,
    every other asset taken out of its group, the groups no longer found deleted (so a
    group of one dissolves)."""
    members = [asset_id for _, _, asset_ids in groups for asset_id in asset_ids]
    await conn.execute(
        QUERIES["assets_clear_similar_group_except"], {"config_id": config_id, "keep": members}
    )
    kept: list[int] = []
    for group_id, primary, asset_ids in groups:
        params: dict[str, Any] = {"config_id": config_id, "primary_asset_id": primary}
        if group_id is None:
            cur = await conn.execute(QUERIES["similar_group_insert"], {**params, "now": now})
            row = await cur.fetchone()
            assert row is not None  # an INSERT ... RETURNING returns its row
            group_id = int(row[0])
        else:
            await conn.execute(
                QUERIES["similar_group_set_primary"], {**params, "group_id": group_id}
            )
        kept.append(group_id)
        await conn.execute(
            QUERIES["assets_set_similar_group"],
            {"config_id": config_id, "group_id": group_id, "ids": list(asset_ids)},
        )
    await conn.execute(
        QUERIES["similar_groups_delete_except"], {"config_id": config_id, "keep": kept}
    )


async def livephoto_candidates(conn: Conn, config_id: UUID) -> list[dict[str, Any]]:
    """The config's photos and videos that may pair as Live Photos or stack."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(QUERIES["livephoto_candidates"], {"config_id": config_id})
    return list(await cur.fetchall())


async def write_pairs(conn: Conn, config_id: UUID, pairs: Mapping[int, int]) -> None:
    """The config's Live Photo pairs are exactly ``pairs`` (image id: video id)."""
    await _write_links(conn, config_id, pairs, _PAIRS)


async def write_bursts(
    conn: Conn, config_id: UUID, bursts: Sequence[BurstRow], now: datetime
) -> None:
    """The config's bursts are exactly ``bursts``."""
    members = [asset_id for _, _, asset_ids in bursts for asset_id in asset_ids]
    await conn.execute(
        QUERIES["assets_clear_burst_except"], {"config_id": config_id, "keep": members}
    )
    for key, primary, asset_ids in bursts:
        cur = await conn.execute(
            QUERIES["burst_upsert"],
            {"config_id": config_id, "burst_key": key, "primary_asset_id": primary, "now": now},
        )
        row = await cur.fetchone()
        assert row is not None  # an upsert with DO UPDATE always returns its row
        await conn.execute(
            QUERIES["assets_set_burst"],
            {"config_id": config_id, "burst_id": row[0], "ids": list(asset_ids)},
        )
    await conn.execute(
        QUERIES["bursts_delete_except"],
        {"config_id": config_id, "keep": [key for key, _, _ in bursts]},
    )


async def write_stacks(conn: Conn, config_id: UUID, stacks: Mapping[int, tuple[int, str]]) -> None:
    """The config's stacks are exactly ``stacks`` (asset id: its primary's id and what it
    is to it, ``raw``, ``format`` or ``copy``)."""
    await _write_links(
        conn,
        config_id,
        {asset_id: primary for asset_id, (primary, _) in stacks.items()},
        _STACKS,
        {asset_id: kind for asset_id, (_, kind) in stacks.items()},
    )


async def _write_links(
    conn: Conn,
    config_id: UUID,
    links: Mapping[int, int],
    queries: _LinkQueries,
    kinds: Mapping[int, str] | None = None,
) -> None:
    """The config's links of one kind are exactly ``links`` (asset id: the asset it links
    to, and its ``kinds`` where the link has one): every other one cleared, then each
    set."""
    await conn.execute(queries.clear_except, {"config_id": config_id, "keep": list(links)})
    for asset_id, target_id in sorted(links.items()):
        params: dict[str, Any] = {
            "config_id": config_id,
            queries.source: asset_id,
            queries.target: target_id,
        }
        if queries.kind is not None and kinds is not None:
            params[queries.kind] = kinds[asset_id]
        await conn.execute(queries.set_one, params)
