"""The files crawls could not ingest, as an operator acts on them (ADR 0058): one group
a config and reason (``files/errors.plain_reason`` makes one cause one reason), newest
first, each group's files newest first and paged by a keyset :class:`FileCursor`.
``safelight assets --failed`` and the dashboard's "Failed files" page read the same
documents (``failedfiles.sql``).

Every read takes ``owner``, keyword-only and without a default, so no caller can forget
it: the CLI passes None (every config), the dashboard its viewer's ``owner`` (ADR 0044).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.sql import load_queries

QUERIES = load_queries("safelight.views", "failedfiles.sql")

Pool = AsyncConnectionPool[Any]
Row = dict[str, Any]

NEXT_CRAWL = "at the next crawl"
"""When a due failed file (or one nothing is known of) is read again."""


@dataclass(frozen=True, slots=True)
class FileCursor:
    """Where a page of one reason's files ends: its last file's last-seen time and path
    (the order: newest first, then by path). Opaque to clients (URL-safe base64)."""

    last_seen_at: datetime
    path: str

    def encode(self) -> str:
        text = f"{self.last_seen_at.isoformat()}|{self.path}"
        return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, token: str) -> FileCursor:
        """The cursor ``token`` names; ValueError if it names none."""
        try:
            raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
            seen, path = raw.split("|", 1)
            last_seen_at = datetime.fromisoformat(seen)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise ValueError("not a cursor of this API") from None
        if last_seen_at.tzinfo is None:
            raise ValueError("not a cursor of this API")
        return cls(last_seen_at, path)


def is_due(retry_after: datetime | None, now: datetime, *, unknown: bool = False) -> bool:
    """Whether the next crawl reads the failed file again, changed or not: it is due, or
    the file as it was when it failed is ``unknown`` (``walk/failures.read_again``)."""
    return unknown or retry_after is None or retry_after <= now


def next_try(file: Row, shown: Callable[[datetime], str]) -> str:
    """When a crawl reads a failed file (a document's row) again, its time as ``shown``
    writes it: at the next crawl if it is due, else when it changes or its backoff ends."""
    if file["due"]:
        return NEXT_CRAWL
    return f"when it changes, or after {shown(file['retry_after'])}"


def _file(row: Row, now: datetime) -> Row:
    return {
        "path": row["file_path"],
        "first_seen_at": row["first_seen_at"],
        "last_seen_at": row["last_seen_at"],
        "failures": row["failures"],
        "retry_after": row["retry_after"],
        "due": is_due(row["retry_after"], now, unknown=row["unknown"]),
    }


def _group(first: Row, files: int, last_seen_at: datetime) -> Row:
    return {
        "config_id": first["storage_config_id"],
        "root": first["root_path"],
        "owner": first["owner"],
        "reason": first["reason"],
        "files": files,
        "last_seen_at": last_seen_at,
        "rows": [],
        "next": None,
    }


def _next(group: Row) -> str | None:
    """The cursor after the group's last row shown, when it has more than shown."""
    if group["files"] <= len(group["rows"]) or not group["rows"]:
        return None
    last = group["rows"][-1]
    return FileCursor(last["last_seen_at"], last["path"]).encode()


async def _fetch(pool: Pool, name: str, params: dict[str, Any]) -> list[Row]:
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES[name], params)
        return list(await cur.fetchall())


def _grouped(rows: Iterable[Row], now: datetime) -> list[Row]:
    groups: list[Row] = []
    for row in rows:
        key = (row["storage_config_id"], row["reason"])
        if not groups or (groups[-1]["config_id"], groups[-1]["reason"]) != key:
            groups.append(_group(row, int(row["reason_files"]), row["reason_last_seen_at"]))
        groups[-1]["rows"].append(_file(row, now))
    for group in groups:
        group["next"] = _next(group)
    return groups


async def failed_by_reason(
    pool: Pool,
    now: datetime,
    *,
    owner: str | None,
    config_id: UUID | None = None,
    per_reason: int | None,
) -> list[Row]:
    """Each reason of each config of ``owner`` (None: all; or the one config asked for,
    if theirs) with its count, newest first in a config, and its ``per_reason`` newest
    files (None: all of them)."""
    rows = await _fetch(
        pool,
        "asset_errors_by_reason",
        {"owner": owner, "config_id": config_id, "per_reason": per_reason},
    )
    return _grouped(rows, now)


async def failed_of_reason(
    pool: Pool,
    now: datetime,
    *,
    owner: str | None,
    config_id: UUID,
    reason: str,
    after: FileCursor | None,
    limit: int,
) -> Row | None:
    """A page of ``limit`` files of one reason of a config of ``owner``, after ``after``
    (None: the first page; past the last file, a page of none); None when the config
    has no file failed for it, or is not ``owner``'s: the same None, so the two answer
    alike."""
    counted = await _fetch(
        pool,
        "asset_errors_reason_count",
        {"owner": owner, "config_id": config_id, "reason": reason},
    )
    if not counted:
        return None
    rows = await _fetch(
        pool,
        "asset_errors_of_reason_page",
        {
            "owner": owner,
            "config_id": config_id,
            "reason": reason,
            "after_seen": None if after is None else after.last_seen_at,
            "after_path": None if after is None else after.path,
            "limit": limit + 1,
        },
    )
    group = _group(counted[0], int(counted[0]["files"]), counted[0]["last_seen_at"])
    group["rows"] = [_file(row, now) for row in rows[:limit]]
    if len(rows) > limit:
        last = rows[limit - 1]
        group["next"] = FileCursor(last["last_seen_at"], last["file_path"]).encode()
    return group
