"""The scrub's reads and writes of ``assets`` (ADR 0062): which assets to read again,
oldest check first, and what was found.

Writes take the connection of the caller's fenced transaction (``ctx.fenced()``), so an
attempt that lost its item writes nothing. Every query is a named block of
``scrubbing.sql``, read only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg
from psycopg.rows import dict_row

from safelight.core.sql import load_queries
from safelight.library.files.scrubbing import Recorded

QUERIES: Mapping[str, str] = load_queries("safelight.library.catalogue", "scrubbing.sql")

Conn = psycopg.AsyncConnection[Any]


@dataclass(frozen=True, slots=True)
class Due:
    """An asset the scrub is to read again, and where it stands in the order."""

    id: int
    recorded: Recorded
    checked_at: datetime | None


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a run is in the order: after this check time (None: among the never
    checked) and id."""

    checked_at: datetime | None = None
    id: int = 0


async def due_page(
    conn: Conn, config_id: UUID, started: datetime, after: Cursor, limit: int
) -> list[Due]:
    """The next ``limit`` assets of the config after ``after``, oldest check first (the
    never checked first of all), leaving out those checked since ``started``."""
    rows: list[dict[str, Any]] = []
    if after.checked_at is None:
        rows = await _page(
            conn,
            QUERIES["assets_never_scrubbed_of_config"],
            config_id,
            after_id=after.id,
            limit=limit,
        )
        if len(rows) == limit:
            return [_due(r) for r in rows]
        after = Cursor(_BEFORE_ANY_CHECK, 0)
    rows += await _page(
        conn,
        QUERIES["assets_scrubbed_before_of_config"],
        config_id,
        after_checked=after.checked_at,
        after_id=after.id,
        started=started,
        limit=limit - len(rows),
    )
    return [_due(r) for r in rows]


_BEFORE_ANY_CHECK = datetime(1, 1, 1, tzinfo=UTC)
"""Earlier than any check time: the keyset at the start of the checked part."""


async def _page(conn: Conn, query: str, config_id: UUID, **params: Any) -> list[dict[str, Any]]:
    cur = conn.cursor(row_factory=dict_row)
    await cur.execute(query, {"config_id": config_id, **params})
    return list(await cur.fetchall())


def _due(r: Mapping[str, Any]) -> Due:
    return Due(
        r["id"],
        Recorded(r["file_path"], r["content_hash"], r["size_bytes"], r["modified_ns"]),
        r["content_checked_at"],
    )


@dataclass(frozen=True, slots=True)
class Checked:
    """What the scrub found of one asset: ``found_hash`` None when the content is the
    recorded one."""

    due: Due
    found_hash: str | None


async def write_checked(
    conn: Conn, config_id: UUID, checked: Sequence[Checked], now: datetime
) -> list[int]:
    """Record what the scrub found; the ids of the assets newly reported changed (a
    change already reported, with the same bytes, keeps its first time)."""
    newly: list[int] = []
    for one in checked:
        recorded = one.due.recorded
        params: dict[str, Any] = {
            "id": one.due.id,
            "config_id": config_id,
            "now": now,
            "content_hash": recorded.content_hash,
            "size_bytes": recorded.size_bytes,
            "modified_ns": recorded.modified_ns,
        }
        if one.found_hash is None:
            await conn.execute(QUERIES["asset_content_intact"], params)
            continue
        cur = await conn.execute(
            QUERIES["asset_content_changed"], {**params, "found_hash": one.found_hash}
        )
        row = await cur.fetchone()
        if row is not None and row[0]:
            newly.append(one.due.id)
    return newly
