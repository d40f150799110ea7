"""What the scrub of the originals found (``scrub.sql``, ADR 0062): the originals whose
content changed while their size and modification time did not, as ``status``,
``assets --changed`` and the dashboard's configs page show them.

``owner`` is keyword-only and without a default, as in ``views.queries``: the CLI passes
None (every config), the dashboard its viewer's owner."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.core.sql import load_queries

QUERIES = load_queries("safelight.views", "scrub.sql")


async def changed_count(
    pool: AsyncConnectionPool[Any], *, config_id: UUID | None = None, owner: str | None
) -> int:
    """How many live originals are reported changed."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_changed_count_shown"], {"config_id": config_id, "owner": owner}
        )
        row = await cur.fetchone()
    return 0 if row is None else int(row["changed"])


async def changed_list(
    pool: AsyncConnectionPool[Any],
    *,
    config_id: UUID | None = None,
    limit: int | None = None,
    owner: str | None,
) -> list[dict[str, Any]]:
    """The live originals reported changed, the last found first."""
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(
            QUERIES["assets_changed_list"],
            {"config_id": config_id, "limit": limit, "owner": owner},
        )
        return list(await cur.fetchall())


def changed_line(count: int) -> str | None:
    """What ``status`` says when originals changed: None when none did."""
    if count == 0:
        return None
    if count == 1:
        return "1 original changed without its time changing: run `safelight assets --changed`"
    return (
        f"{count} originals changed without their time changing: run `safelight assets --changed`"
    )
