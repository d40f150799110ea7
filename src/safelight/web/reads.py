"""The web dashboard's own reads (``queries.sql``); the queue's and a config's counts
are the operator's views (``safelight.views.queries``), which the CLI reads too.

Every read takes ``owner``, keyword-only and without a default, so no route can forget
it: the viewer's ``Viewer.owner`` (None for an admin: every owner; ADR 0044)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.sql import load_queries
from safelight.handlers import CRAWL

QUERIES: Mapping[str, str] = load_queries("safelight.web", "queries.sql")

Pool = AsyncConnectionPool[Any]
Row = dict[str, Any]


async def assets_places_of_years_on_day(
    pool: Pool,
    *,
    month: int,
    days: Sequence[int],
    years: Sequence[int],
    per_year: int,
    owner: str | None,
) -> list[Row]:
    """The places of the day's assets of ``years``, up to ``per_year`` a year, most
    photographed first, of the enabled configs of ``owner``."""
    if not years:
        return []
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_places_of_years_on_day"],
            {
                "month": month,
                "days": list(days),
                "years": list(years),
                "per_year": per_year,
                "owner": owner,
            },
        )
        return list(await cur.fetchall())


async def assets_on_day(
    pool: Pool,
    *,
    month: int,
    days: Sequence[int],
    before_year: int,
    after: tuple[int, datetime, int],
    limit: int,
    owner: str | None,
) -> list[Row]:
    """Up to ``limit`` of the day's tiles after ``after`` (year, local time, id), of the
    enabled configs of ``owner``."""
    year, local, asset_id = after
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_on_day"],
            {
                "month": month,
                "days": list(days),
                "year": before_year,
                "after_year": year,
                "after_local": local,
                "after_id": asset_id,
                "limit": limit,
                "owner": owner,
            },
        )
        return list(await cur.fetchall())


async def assets_of_bursts(pool: Pool, burst_ids: Sequence[int], *, owner: str | None) -> list[Row]:
    if not burst_ids:
        return []
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_of_bursts"], {"burst_ids": list(burst_ids), "owner": owner}
        )
        return list(await cur.fetchall())


async def assets_of_similar_groups(
    pool: Pool, group_ids: Sequence[int], *, owner: str | None
) -> list[Row]:
    if not group_ids:
        return []
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_of_similar_groups"], {"group_ids": list(group_ids), "owner": owner}
        )
        return list(await cur.fetchall())


async def assets_nearest_days(
    pool: Pool,
    *,
    position: int,
    month: int,
    days: Sequence[int],
    before_year: int,
    owner: str | None,
) -> list[Row]:
    """The nearest month and day before and after the one at ``position`` (its day of a
    leap year, 1-366), other than ``month`` and ``days``, on which ``owner``'s enabled
    configs hold a live asset captured before ``before_year``: rows of ``side``
    (``before``, ``after``), ``month``, ``day``, ``days_away``; none on a side without."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_nearest_days"],
            {
                "position": position,
                "month": month,
                "days": list(days),
                "year": before_year,
                "owner": owner,
            },
        )
        return list(await cur.fetchall())


@dataclass(frozen=True, slots=True)
class ProxyFile:
    path: str
    """Relative to the proxy root, as its row names it."""
    size_bytes: int | None
    storage_config_id: UUID
    content_hash: str


async def proxy_of_asset(
    pool: Pool, asset_id: int, proxy_type: str, *, owner: str | None
) -> ProxyFile | None:
    """The proxy, or None for an asset that is absent, soft-deleted, of a disabled config
    or of another owner than ``owner``: the same None, so all answer alike."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["proxy_of_asset"],
            {"asset_id": asset_id, "proxy_type": proxy_type, "owner": owner},
        )
        row = await cur.fetchone()
    return None if row is None else ProxyFile(**row)


async def configs_overview(
    pool: Pool, config_id: UUID | None = None, *, owner: str | None
) -> list[Row]:
    """Each config of ``owner`` (or the one asked for, if it is one of them) with its
    running item and its last crawl."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["configs_overview"],
            {"crawl_kind": CRAWL.name, "config_id": config_id, "owner": owner},
        )
        return list(await cur.fetchall())
