"""Pause and resume: a kind, or a storage config's work, held across all Workers.

A pause is a row (``paused_kinds``) or a stamp on the config (``storage_configs.paused_at``),
read by the claim itself (``items_claim``), so it holds for every Worker at once with
no message to any of them (ADR 0060). It stops claims, never a running item: the item
finishes as it would have, and nothing of its kind or config starts after it until the
pause is lifted. Who paused it and when is kept, to be shown wherever the work is.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.core.sql import load_queries
from safelight.work.hours import HeavyWindow

QUERIES = load_queries("safelight.work", "pausing.sql")


@dataclass(frozen=True, slots=True)
class Paused:
    """One paused kind (``config_id`` None) or config (``kind`` None)."""

    kind: str | None
    config_id: UUID | None
    owner: str | None
    root_path: str | None
    paused_at: datetime
    paused_by: str | None
    queued: int
    """Its queued items, none of which any Worker claims until it is resumed."""

    def since(self) -> str:
        """``paused (by alice at 14:02)``, in the machine's local time."""
        at = self.paused_at.astimezone().strftime("%Y-%m-%d %H:%M")
        return f"paused (by {self.paused_by} at {at})" if self.paused_by else f"paused (at {at})"


@dataclass(frozen=True, slots=True)
class ResumedAll:
    kinds: int
    configs: int


class Pauses:
    """The pause switches, read and written through the pool."""

    def __init__(self, pool: AsyncConnectionPool[Any], clock: Clock) -> None:
        self._pool = pool
        self._clock = clock

    async def pause_kind(self, kind: str, by: str | None) -> bool:
        """``False`` when it was paused already (its first pause is kept). The caller
        checks that the kind exists: the table takes any name, so a kind added later
        can be paused before its first Worker runs."""
        params = {"kind": kind, "by": by, "now": self._clock.now()}
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["paused_kind_add"], params)
            return await cur.fetchone() is not None

    async def resume_kind(self, kind: str) -> bool:
        """``False`` when it was not paused."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["paused_kind_remove"], {"kind": kind})
            return await cur.fetchone() is not None

    async def pause_config(self, config_id: UUID, by: str | None) -> bool:
        """``False`` when no such config exists."""
        params = {"config_id": config_id, "by": by, "now": self._clock.now()}
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["config_pause"], params)
            return await cur.fetchone() is not None

    async def resume_config(self, config_id: UUID) -> bool:
        """``False`` when no such config exists."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["config_resume"], {"config_id": config_id})
            return await cur.fetchone() is not None

    async def resume_all(self) -> ResumedAll:
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["paused_remove_all"])
            row = await cur.fetchone()
        assert row is not None  # two counts: always one row
        return ResumedAll(kinds=int(row[0]), configs=int(row[1]))

    async def paused(self, owner: str | None = None) -> list[Paused]:
        return await paused(self._pool, owner)


async def paused(pool: AsyncConnectionPool[Any], owner: str | None = None) -> list[Paused]:
    """Every paused kind, and every paused config of ``owner`` (None: all), the oldest
    pause first."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES["paused_list"], {"owner": owner})
        rows = await cur.fetchall()
    return [Paused(**row) for row in rows]


def paused_document(p: Paused) -> dict[str, Any]:
    """A paused kind or config as ``status --json`` and the dashboard carry it."""
    return {
        "kind": p.kind,
        "config_id": p.config_id,
        "owner": p.owner,
        "root_path": p.root_path,
        "paused_at": p.paused_at,
        "paused_by": p.paused_by,
        "queued": p.queued,
        "shown": p.since(),
    }


def heavy_hours_document(heavy: HeavyWindow | None, at: datetime) -> dict[str, Any] | None:
    """The heavy kinds' window at ``at`` as ``status`` and the dashboard show it; None:
    no window (heavy kinds run at any hour)."""
    if heavy is None:
        return None
    is_open = heavy.hours.contains(at)
    return {
        "window": str(heavy.hours),
        "kinds": sorted(heavy.kinds),
        "open": is_open,
        "shown": f"open until {heavy.hours.end:%H:%M}" if is_open else heavy.waits_for(at),
    }
