"""The operator's read-only views of the queue and the library (``queries.sql``): the
CLI's commands and ``safelight serve`` read the same ones.

The queue's views take ``owner``, keyword-only and without a default so no caller can
forget it: the CLI passes None (every item), the dashboard its viewer's ``owner``
(ADR 0044), which shows only the items of that owner's configs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.sql import load_queries
from safelight.work.hours import HeavyWindow
from safelight.work.pausing import heavy_hours_document, paused, paused_document

QUERIES = load_queries("safelight.views", "queries.sql")

Row = dict[str, Any]


async def _rows(
    pool: AsyncConnectionPool[Any], name: str, params: Mapping[str, Any] | None = None
) -> list[Row]:
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES[name], dict(params or {}))
        return list(await cur.fetchall())


async def _row(
    pool: AsyncConnectionPool[Any], name: str, params: Mapping[str, Any] | None = None
) -> Row:
    rows = await _rows(pool, name, params)
    if len(rows) != 1:  # pragma: no cover - the queries used here return one row
        raise RuntimeError(f"{name} returned {len(rows)} rows, not one")
    return rows[0]


async def list_items(
    pool: AsyncConnectionPool[Any],
    *,
    status: str | None = None,
    config_id: UUID | None = None,
    kind: str | None = None,
    limit: int | None = None,
    owner: str | None,
) -> list[Row]:
    return await _rows(
        pool,
        "items_list",
        {"status": status, "config_id": config_id, "kind": kind, "limit": limit, "owner": owner},
    )


@dataclass(frozen=True, slots=True)
class ItemOwner:
    owner: str | None
    """The owner of the item's config; None for an item of no config (an admin's alone)."""


async def item_owner(pool: AsyncConnectionPool[Any], item_id: int) -> ItemOwner | None:
    """Whose the item is, for a route to answer an item its viewer may not see exactly
    as one that does not exist (None)."""
    rows = await _rows(pool, "item_owner", {"item_id": item_id})
    return ItemOwner(rows[0]["owner"]) if rows else None


async def queue_status(
    pool: AsyncConnectionPool[Any],
    now: datetime | None,
    *,
    limit: int,
    owner: str | None,
    heavy: HeavyWindow | None = None,
    at: datetime | None = None,
) -> Row:
    """Everything ``safelight status`` shows, as one document, of ``owner``'s items
    (None: all).

    ``now`` is the clock's ``transition_time()``: None judges leases by the database's
    clock, as lease recovery does. ``heavy`` and ``at`` (the clock's ``now()``): the
    heavy kinds' window, shown as open or waited for (ADR 0060)."""
    counts = await _rows(pool, "status_counts", {"owner": owner})
    totals: dict[str, int] = {}
    for row in counts:
        totals[row["status"]] = totals.get(row["status"], 0) + int(row["count"])
    return {
        **await _row(pool, "server_version"),
        "totals": totals,
        "counts": counts,
        "running": await _rows(pool, "status_running", {"now": now, "owner": owner}),
        "stalls": {
            **await _row(pool, "status_stall_count", {"owner": owner}),
            "recent": await _rows(pool, "status_stalls", {"limit": limit, "owner": owner}),
        },
        "failures": await _rows(pool, "status_failures", {"limit": limit, "owner": owner}),
        "retries": _retries(
            await _rows(
                pool, "status_retries_waiting", {"now": now, "limit": limit, "owner": owner}
            )
        ),
        "paused": [paused_document(p) for p in await paused(pool, owner)],
        "heavy_hours": None if at is None else heavy_hours_document(heavy, at),
    }


def _retries(rows: list[Row]) -> Row:
    """The waiting retries as ``status`` shows them: the count of all, the soonest few."""
    waiting = int(rows[0]["waiting"]) if rows else 0
    return {"waiting": waiting, "soonest": [_without(row, "waiting") for row in rows]}


def _without(row: Row, key: str) -> Row:
    return {k: v for k, v in row.items() if k != key}


async def list_assets(
    pool: AsyncConnectionPool[Any],
    *,
    config_id: UUID | None = None,
    deleted: bool = False,
    limit: int | None = None,
) -> list[Row]:
    return await _rows(
        pool, "assets_list", {"config_id": config_id, "deleted": deleted, "limit": limit}
    )


async def list_duplicates(
    pool: AsyncConnectionPool[Any], *, config_id: UUID | None = None, limit: int | None = None
) -> list[Row]:
    return await _rows(pool, "duplicates_list", {"config_id": config_id, "limit": limit})


async def list_similar_groups(
    pool: AsyncConnectionPool[Any], *, config_id: UUID | None = None, limit: int | None = None
) -> list[Row]:
    """The similar groups (ADR 0066), at most ``limit``: ``[{"id", "storage_config_id",
    "primary_asset_id", "count", "members": [{"id", "file_path", "captured_at",
    "captured_local", "captured_at_source"}]}]``, the shown member first."""
    groups: list[Row] = []
    for row in await _rows(pool, "similar_groups_list", {"config_id": config_id, "limit": limit}):
        if not groups or groups[-1]["id"] != row["group_id"]:
            groups.append(
                {
                    "id": row["group_id"],
                    "storage_config_id": row["storage_config_id"],
                    "primary_asset_id": row["primary_asset_id"],
                    "count": 0,
                    "members": [],
                }
            )
        groups[-1]["members"].append(
            {
                k: row[k]
                for k in ("id", "file_path", "captured_at", "captured_local", "captured_at_source")
            }
        )
        groups[-1]["count"] += 1
    return groups


async def library_counts(pool: AsyncConnectionPool[Any], config_id: UUID) -> Row:
    return await _row(pool, "library_counts_of_config", {"config_id": config_id})


async def busiest_day(
    pool: AsyncConnectionPool[Any], config_id: UUID, before_year: int
) -> tuple[int, int] | None:
    """The (month, day) most of the config's assets of years before ``before_year`` were
    captured on; None when it has none."""
    rows = await _rows(
        pool, "assets_busiest_day_of_config", {"config_id": config_id, "before_year": before_year}
    )
    return (int(rows[0]["month"]), int(rows[0]["day"])) if rows else None


async def asset_errors(pool: AsyncConnectionPool[Any], config_id: UUID) -> list[Row]:
    return await _rows(pool, "asset_errors_of_config", {"config_id": config_id})


async def health_rows(
    conn: AsyncConnection[Any],
    now: datetime | None,
    *,
    recovery_seconds: float,
    within_seconds: float,
) -> tuple[Row, Row]:
    """What ``safelight health`` judges: the overdue leases and the Workers seen, on one
    connection (not the pool: the check opens no more than it needs)."""
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(
        QUERIES["items_lease_overdue"], {"now": now, "recovery_seconds": recovery_seconds}
    )
    leases = await cur.fetchone()
    await cur.execute(QUERIES["workers_seen"], {"now": now, "within_seconds": within_seconds})
    workers = await cur.fetchone()
    assert leases is not None and workers is not None  # one row each, always
    return leases, workers


async def workers_seen_count(
    pool: AsyncConnectionPool[Any], now: datetime | None, *, within_seconds: float
) -> int:
    """How many Workers wrote their presence within ``within_seconds`` of ``now`` (the
    clock's ``transition_time()``; None: the database's clock), as ``health`` judges."""
    row = await _row(pool, "workers_seen", {"now": now, "within_seconds": within_seconds})
    return int(row["seen"])
