"""The checks that keep safelight's writes and deletes on its own side of the host:
every registered folder disjoint from safelight's folders (``library.roots``), and a
proxy root that belongs to this database (``library.proxyroot``). A Worker runs them at
its start; the handlers that write or delete run them again before their first effect,
since a config can be added, or a marker replaced, while a Worker runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from safelight.handlers.services import Services
from safelight.library.configs import every_config
from safelight.library.proxyroot import claim_proxy_root, database_identity
from safelight.library.roots import (
    OwnFolder,
    RegisteredRoot,
    check_own_folder,
    check_registered_roots,
    check_storage_root,
    own_folders,
)


def services_own_folders(services: Services) -> tuple[OwnFolder, ...]:
    settings = services.settings
    return own_folders(settings.home, settings.proxies)


async def check_every_root(services: Services) -> None:
    """Every config's root, of every owner and in any state, against safelight's
    folders: raise ``RootOverlap`` naming the first that overlaps. Not only the active
    ones, nor only a per-user Worker's: the marker, the sweep and the purge write and
    delete under the proxy root whoever's library lies there, and a disabled config's
    folder still holds originals."""
    async with services.pool.connection() as conn:
        configs = await every_config(conn)
    registered = [
        RegisteredRoot(c.root_path, f"storage config {c.id} of {c.owner}", c.active)
        for c in configs
    ]
    await asyncio.to_thread(check_registered_roots, registered, services_own_folders(services))


async def check_proxy_root(services: Services) -> None:
    """Before anything is written or deleted under the proxy root: no registered folder
    overlaps safelight's folders (so the marker is never written in a library, nor
    around one), and the proxy root is this database's (claimed on first use); raise
    ``RootOverlap`` or ``ProxyRootTaken``."""
    for folder in services_own_folders(services):
        check_own_folder(folder)
    await check_every_root(services)
    async with services.pool.connection() as conn:
        identity = await database_identity(conn)
    await asyncio.to_thread(claim_proxy_root, services.settings.proxies, identity)


async def check_config_root(services: Services, root: Path) -> None:
    """Raise ``RootOverlap`` if ``root`` overlaps safelight's folders."""
    await asyncio.to_thread(check_storage_root, root, services_own_folders(services))
