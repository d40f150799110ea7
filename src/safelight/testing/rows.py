"""Row factories: rows the tests need in place, written by the product's own code.

A storage config is written by the catalogue (:mod:`safelight.library.catalogue.configs`:
its ``insert_config``, and ``StorageConfigs.disable`` for an inactive one), not by a
test's copy of its SQL, so a change to the table is made in one place. It skips what
``StorageConfigs.add`` checks on the disk (the folder exists, lies apart from the others),
which lets a store test name folders that do not exist.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from safelight.core.clock import Clock
from safelight.library.catalogue.configs import StorageConfigs, insert_config


async def add_config(
    db: AsyncConnectionPool[Any] | psycopg.AsyncConnection[Any] | str,
    clock: Clock,
    owner: str = "alice",
    root: str | None = None,
    *,
    active: bool = True,
) -> UUID:
    """A storage config of ``owner`` at ``root`` (by default a folder name no other test
    config has), created at ``clock.now()``; inactive unless ``active`` (on a pool).

    ``db`` is a pool, a connection (the row is written in its transaction), or a
    database URL (for a synchronous test, through ``asyncio.run``).
    """
    root = root or f"/photos/{owner}/{clock.monotonic()}-{id(object())}"
    if isinstance(db, str):
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as conn:
            return await add_config(conn, clock, owner, root, active=active)
    if isinstance(db, AsyncConnectionPool):
        async with db.connection() as conn:
            config_id = await add_config(conn, clock, owner, root)
        if not active:
            await StorageConfigs(db, clock).disable(config_id)
        return config_id
    assert active, "an inactive config is made on a pool (StorageConfigs.disable)"
    config = await insert_config(db, owner, root, clock.now())
    assert config is not None, f"{owner} already has a config of {root}"
    return config.id
