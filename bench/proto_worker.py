"""A safelight Worker process with one change under trial: finish and claim in one commit.

Benchmark-only. Runs ``safelight worker`` (same arguments) with the store replaced by
:class:`FinishAndClaimStore`: completing an attempt also claims the same Worker's next
item, in the same transaction, so an item costs one commit (one WAL flush) instead of
two. bench/throughput.py runs it as ``safelight-1commit`` beside the real Worker; the
change proposed for src/ is in docs/benchmarks.md.

What it keeps: the claim and the finish are the statements of queries.sql, unchanged;
the finish is fenced as before; the claim runs after it in the same transaction, so it
sees the finished item's config free, and a lost race for a config (the unique index)
rolls back only the claim (a savepoint), never the finish.
What it leaves out (a real change must not): an item claimed this way for a Worker that
then shuts down is not released here, and lease recovery would take it back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping
from typing import Any

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

import safelight.app
from safelight.cli.main import main
from safelight.work.model import Status, WorkItem
from safelight.work.sql import QUERIES
from safelight.work.store import (
    RUNNING_CONFIG_INDEX,
    WorkStore,
    _is_unique_violation_of,
    _item_from_row,
)

# The single-statement form: the finish's CTEs, then the claim's, in one statement. Its
# claim runs on the statement's snapshot, where the finished item is still running, so
# it never takes the next item of that item's own config (another Worker, woken by the
# finish's NOTIFY, does); the unique index cannot be hit by the pair.
_FINISH_CTES = """
WITH finished AS (
    UPDATE work_items
    SET status = 'succeeded', finished_at = %(now)s, lease_expires_at = NULL,
        result = %(result)s, error = NULL
    WHERE id = %(id)s AND attempt = %(attempt)s AND status = 'running'
    RETURNING id, attempt
), finished_history AS (
    UPDATE work_attempts a
    SET ended_at = %(now)s, outcome = 'succeeded'
    FROM finished f
    WHERE a.work_item_id = f.id AND a.attempt = f.attempt
    RETURNING a.work_item_id
),
"""
_CLAIM = QUERIES["claim_item"].strip()
_CLAIM = _CLAIM[_CLAIM.index("\nWITH ") + 1 :] if not _CLAIM.startswith("WITH ") else _CLAIM
assert _CLAIM.startswith("WITH ") and _CLAIM.endswith("SELECT * FROM claimed")
FINISH_AND_CLAIM = (
    _FINISH_CTES
    + _CLAIM[len("WITH ") : -len("SELECT * FROM claimed")]
    + "SELECT (SELECT count(*) FROM finished_history) AS finished_count, c.*"
    + " FROM (SELECT 1) AS one LEFT JOIN claimed c ON true"
)
ONE_STATEMENT = os.environ.get("BENCH_FINISH_AND_CLAIM") == "statement"


class FinishAndClaimStore(WorkStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._claims: dict[str, tuple[list[str], str | None, float]] = {}
        self._owners: dict[int, str] = {}
        self._next: dict[str, WorkItem] = {}

    async def claim(
        self,
        worker_id: str,
        kinds: Collection[str],
        *,
        owner: str | None = None,
        lease_seconds: float,
    ) -> WorkItem | None:
        self._claims[worker_id] = (list(kinds), owner, float(lease_seconds))
        item = self._next.pop(worker_id, None)
        if item is None:
            item = await super().claim(worker_id, kinds, owner=owner, lease_seconds=lease_seconds)
        if item is not None:
            self._owners[item.id] = worker_id
        return item

    async def complete(
        self, item_id: int, attempt: int, result: Mapping[str, Any] | None = None
    ) -> bool:
        worker_id = self._owners.pop(item_id, None)
        now = self._clock.now()
        if ONE_STATEMENT and worker_id is not None and worker_id in self._claims:
            return await self._complete_in_one_statement(item_id, attempt, result, worker_id)
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                QUERIES["finish_attempt"],
                {
                    "id": item_id,
                    "attempt": attempt,
                    "status": Status.SUCCEEDED.value,
                    "result": None if result is None else Jsonb(dict(result)),
                    "error": None,
                    "now": now,
                },
            )
            applied = await cur.fetchone() is not None
            if worker_id is None or worker_id not in self._claims:
                return applied
            kinds, owner, lease_seconds = self._claims[worker_id]
            row = None
            try:
                async with conn.transaction():  # a savepoint: a lost race keeps the finish
                    claim = conn.cursor(row_factory=dict_row)
                    await claim.execute(
                        QUERIES["claim_item"],
                        {
                            "worker_id": worker_id,
                            "kinds": kinds,
                            "owner": owner,
                            "lease_seconds": lease_seconds,
                            "now": now,
                        },
                    )
                    row = await claim.fetchone()
            except Exception as exc:
                if not _is_unique_violation_of(exc, RUNNING_CONFIG_INDEX):
                    raise
        if row is not None:
            self._next[worker_id] = _item_from_row(row)
        return applied

    async def _complete_in_one_statement(
        self, item_id: int, attempt: int, result: Mapping[str, Any] | None, worker_id: str
    ) -> bool:
        kinds, owner, lease_seconds = self._claims[worker_id]
        params = {
            "id": item_id,
            "attempt": attempt,
            "result": None if result is None else Jsonb(dict(result)),
            "now": self._clock.now(),
            "worker_id": worker_id,
            "kinds": kinds,
            "owner": owner,
            "lease_seconds": lease_seconds,
        }
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            try:
                await cur.execute(FINISH_AND_CLAIM, params)
            except Exception as exc:
                if not _is_unique_violation_of(exc, RUNNING_CONFIG_INDEX):
                    raise
                return await super().complete(item_id, attempt, result)
            row = await cur.fetchone()
        assert row is not None
        if row["id"] is not None:
            self._next[worker_id] = _item_from_row(row)
        return bool(row["finished_count"])


def _app_store(database: Any, settings: Any, clock: Any) -> WorkStore:
    from safelight.handlers import KIND_SPECS

    return FinishAndClaimStore(database.pool, clock, KIND_SPECS, max_stalls=settings.max_stalls)


if __name__ == "__main__":
    safelight.app.app_store = _app_store  # type: ignore[assignment]
    main(sys.argv[1:])
