"""The presence of a Worker process's Workers: ``safelight health``'s "a Worker seen
recently".

An idle Worker's claims find nothing and write nothing, so the queue's own columns
(heartbeats, claims) cannot tell a quiet night from a dead Worker. Each process writes
its Workers' rows of the ``workers`` table (migration 0009) every recovery interval, as
a background task beside lease recovery (the same loop, ``work.maintenance.every``, the
same backoff), and deletes them when it stops cleanly. The rows of a process that died
stay, last seen when it died, until they are older than the work retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.core.sql import load_queries

__all__ = ["Presence", "alive_workers"]

QUERIES = load_queries("safelight.observe", "presence.sql")


class Presence:
    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
        clock: Clock,
        worker_ids: Sequence[str],
        *,
        forget_after: timedelta,
    ) -> None:
        self._pool = pool
        self._clock = clock
        self._worker_ids = list(worker_ids)
        self._forget_after = forget_after

    async def run_once(self) -> None:
        """Write that this process's Workers were seen now (the database's time, or the
        clock's ``transition_time``); delete the rows of processes long gone."""
        async with self._pool.connection() as conn:
            await conn.execute(
                QUERIES["workers_touch"],
                {"worker_ids": self._worker_ids, "now": self._clock.transition_time()},
            )
            await conn.execute(
                QUERIES["workers_forget_stale"], {"cutoff": self._clock.now() - self._forget_after}
            )

    async def leave(self) -> None:
        """Delete this process's rows, as it stops cleanly."""
        async with self._pool.connection() as conn:
            await conn.execute(QUERIES["workers_forget"], {"worker_ids": self._worker_ids})


async def alive_workers(
    conn: AsyncConnection[Any], now: datetime | None, within_seconds: float
) -> list[str]:
    """The ids of the Workers seen in the last ``within_seconds`` (``health``'s window)
    before ``now`` (None: the database's time)."""
    cur = await conn.execute(QUERIES["workers_table_exists"])
    row = await cur.fetchone()
    if row is None or not row[0]:
        return []
    cur = await conn.execute(
        QUERIES["workers_alive"], {"now": now, "within_seconds": within_seconds}
    )
    return [worker_id for (worker_id,) in await cur.fetchall()]
