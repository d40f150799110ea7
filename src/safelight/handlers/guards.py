"""The checks that keep safelight's writes and deletes on its own side of the host:
every registered folder disjoint from safelight's folders (``library.files.roots``), and a
proxy root that belongs to this database (``library.proxystore.proxyroot``). A Worker runs them at
its start; the handlers that write or delete run them again before their first effect,
since a config can be added, or a marker replaced, while a Worker runs."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from safelight.core.filemodes import FileModes, Tightened, make_folder
from safelight.handlers.contract import HandlerFailed
from safelight.handlers.services import Services
from safelight.library.catalogue.configs import StorageConfig, config_by_id, every_config
from safelight.library.catalogue.database import DatabaseIdentity, database_identity
from safelight.library.files.roots import (
    OwnFolder,
    RegisteredRoot,
    RootOverlap,
    check_own_folder,
    check_registered_roots,
    check_storage_root,
    own_folders,
)
from safelight.library.proxystore.proxymodes import make_proxy_root, tighten_proxy_root
from safelight.library.proxystore.proxyroot import claim_proxy_root, read_marker
from safelight.settings import Settings

_log = logging.getLogger(__name__)


def services_own_folders(services: Services) -> tuple[OwnFolder, ...]:
    return settings_own_folders(services.settings)


def settings_own_folders(settings: Settings) -> tuple[OwnFolder, ...]:
    return own_folders(settings.home, settings.proxies)


async def active_config(conn: psycopg.AsyncConnection[Any], config_id: UUID) -> StorageConfig:
    """The item's storage config, on the caller's connection; the item fails, saying
    why, if the config is gone or disabled (a disabled config is never read or written:
    its root may since be in other hands, issue #31)."""
    config = await config_by_id(conn, config_id)
    if config is None:
        raise HandlerFailed(f"storage config {config_id} does not exist")
    if not config.active:
        raise HandlerFailed(f"storage config {config_id} is disabled")
    return config


async def check_every_root(services: Services) -> None:
    """Every config's root, of every owner and in any state, against safelight's
    folders: raise ``RootOverlap`` naming the first that overlaps. Not only the active
    ones, nor only a per-user Worker's: the marker, the sweep and the purge write and
    delete under the proxy root whoever's library lies there, and a disabled config's
    folder still holds originals."""
    await _check_every_root(services.pool, services.settings)


async def _check_every_root(pool: AsyncConnectionPool[Any], settings: Settings) -> None:
    async with pool.connection() as conn:
        configs = await every_config(conn)
    registered = [
        RegisteredRoot(c.root_path, f"storage config {c.id} of {c.owner}", c.active)
        for c in configs
    ]
    await asyncio.to_thread(check_registered_roots, registered, settings_own_folders(settings))


def _check_own_folders(settings: Settings) -> None:
    """safelight's folders are none of the system's: raise ``RootOverlap``."""
    for folder in settings_own_folders(settings):
        check_own_folder(folder)


async def _check_folders(pool: AsyncConnectionPool[Any], settings: Settings) -> None:
    """safelight's folders are none of the system's, and no registered folder overlaps
    them: raise ``RootOverlap``."""
    _check_own_folders(settings)
    await _check_every_root(pool, settings)


async def check_proxy_root(services: Services) -> None:
    """Before anything is written or deleted under the proxy root: no registered folder
    overlaps safelight's folders (so the marker is never written in a library, nor
    around one), and the proxy root is this database's (claimed on first use); raise
    ``RootOverlap`` or ``ProxyRootTaken``. A root it makes is private, and one an
    earlier release made is tightened first (``library.proxystore.proxymodes``, ADR 0043; one
    warning line when anything changed)."""
    _check_own_folders(services.settings)
    # Through ``check_every_root``, the one step of a Worker's start that reads every
    # config: where an interrupt at that step is tried (tests/acceptance/pausepoints).
    await check_every_root(services)
    async with services.pool.connection() as conn:
        identity = await database_identity(conn)
    settings = services.settings
    await asyncio.to_thread(_claim_private, settings, identity)


def _claim_private(settings: Settings, identity: DatabaseIdentity) -> None:
    modes = settings.file_modes()
    root = settings.proxies
    home = settings.home.expanduser().resolve()
    if root.is_relative_to(home):
        make_folder(home, modes.home, modes.gid)  # not made 0755 on the way to the root
    make_proxy_root(root, modes)
    claim_proxy_root(root, identity)
    tightened = tighten_proxy_root(root, modes)
    if tightened:
        _log.warning("%s", tightening_line([("the proxy root", root, tightened)]))


def tightening_line(parts: list[tuple[str, Path, Tightened]]) -> str:
    """The one line saying what a start made private: ``made safelight's files private
    (ADR 0043): the home /h: 1 folder from 0755 to 0700; ...``."""
    said = "; ".join(f"{what} {path}: {tightened.describe()}" for what, path, tightened in parts)
    return f"made safelight's files private (ADR 0043): {said}"


async def tighten_proxy_root_if_ours(
    pool: AsyncConnectionPool[Any], settings: Settings, modes: FileModes
) -> Tightened:
    """At the start of a long-running command: tighten the proxy root made by an earlier
    release, but only a root this database has claimed and that overlaps no registered
    folder (the checks of ``check_proxy_root``, without claiming: ``serve`` claims
    nothing). Otherwise nothing: a Worker's own check says what is wrong, and tightens the
    root once it has claimed it."""
    root = settings.proxies
    if not root.is_dir():
        return Tightened()
    try:
        await _check_folders(pool, settings)
    except RootOverlap:
        return Tightened()
    async with pool.connection() as conn:
        identity = await database_identity(conn)
    if await asyncio.to_thread(read_marker, root) != identity:
        return Tightened()
    return await asyncio.to_thread(tighten_proxy_root, root, modes)


async def check_config_root(services: Services, root: Path) -> None:
    """Raise ``RootOverlap`` if ``root`` overlaps safelight's folders."""
    await asyncio.to_thread(check_storage_root, root, services_own_folders(services))
