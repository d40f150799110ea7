"""Row factories: rows the tests need in place, written with the product's own SQL.

A storage config is inserted by the catalogue's statement
(:mod:`safelight.library.catalogue.configs`), not by a test's copy of it, so a change to
the table is made in one place. It skips what :meth:`StorageConfigs.add
<safelight.library.catalogue.configs.StorageConfigs.add>` checks on the disk (the folder
exists, lies apart from the others), which lets a store test name folders that do not
exist.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.library.catalogue.configs import QUERIES as CONFIG_QUERIES


async def add_config(
    db: AsyncConnectionPool[Any] | psycopg.AsyncConnection[Any] | str,
    clock: Clock,
    owner: str = "alice",
    root: str | None = None,
    *,
    active: bool = True,
) -> UUID:
    """A storage config of ``owner`` at ``root`` (by default a folder name no other test
    config has), created at ``clock.now()``; inactive unless ``active``.

    ``db`` is a pool, a connection (the row is written in its transaction), or a
    database URL (for a synchronous test, through ``asyncio.run``).
    """
    if isinstance(db, str):
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            return await _insert(conn, clock, owner, root, active)
    if isinstance(db, AsyncConnectionPool):
        async with db.connection() as conn:
            return await _insert(conn, clock, owner, root, active)
    return await _insert(db, clock, owner, root, active)


async def _insert(
    conn: psycopg.AsyncConnection[Any], clock: Clock, owner: str, root: str | None, active: bool
) -> UUID:
    params = {
        "owner": owner,
        "root_path": root or f"/photos/{owner}/{clock.monotonic()}-{id(object())}",
        "now": clock.now(),
    }
    cur = await conn.execute(CONFIG_QUERIES["config_insert"], params)
    row = await cur.fetchone()
    assert row is not None, f"{owner} already has a config of {params['root_path']}"
    config_id = UUID(str(row[0]))
    if not active:
        await conn.execute(CONFIG_QUERIES["config_disable"], {"id": config_id})
    return config_id
