"""The checks that keep safelight's writes and deletes on its own side of the host:
storage roots disjoint from safelight's folders (``library.roots``), and a proxy root
that belongs to this database (``library.proxyroot``). A Worker runs both at its start;
the handlers that write or delete run them again before their first effect, since a
config can be added, or a marker replaced, while a Worker runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from safelight.handlers.services import Services
from safelight.library.assets import QUERIES
from safelight.library.proxyroot import claim_proxy_root, database_identity
from safelight.library.roots import (
    OwnFolder,
    check_own_folder,
    check_storage_root,
    check_storage_roots,
    own_folders,
)


def services_own_folders(services: Services) -> tuple[OwnFolder, ...]:
    settings = services.settings
    return own_folders(settings.home, settings.proxies)


async def check_proxy_root(services: Services) -> None:
    """Claim the proxy root for this database, or raise ``ProxyRootTaken``."""
    for folder in services_own_folders(services):
        check_own_folder(folder)
    async with services.pool.connection() as conn:
        identity = await database_identity(conn)
    await asyncio.to_thread(claim_proxy_root, services.settings.proxies, identity)


async def check_config_root(services: Services, root: Path) -> None:
    """Raise ``RootOverlap`` if ``root`` overlaps safelight's folders."""
    await asyncio.to_thread(check_storage_root, root, services_own_folders(services))


async def check_active_roots(services: Services, owner: str | None = None) -> None:
    """Every active config's root (of ``owner``, or everyone's), for a Worker's start and
    the sweep: raise ``RootOverlap`` naming the first that overlaps."""
    async with services.pool.connection() as conn:
        cur = await conn.execute(QUERIES["configs_active_roots"], {"owner": owner})
        roots = [Path(row[0]) for row in await cur.fetchall()]
    await asyncio.to_thread(check_storage_roots, roots, services_own_folders(services))
