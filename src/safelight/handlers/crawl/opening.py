"""Resolve the config and open its root: the storage root held open, the walk set up
to list it (safelight's own folders never entered)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import UUID

from safelight.handlers.contract import HandlerContext, HandlerFailed, config_id_of, handler_failure
from safelight.handlers.crawl.attempt import Attempt
from safelight.handlers.guards import active_config, check_config_root, check_proxy_root
from safelight.handlers.services import Services
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import FailedFile
from safelight.library.files.confinement import describe_os_error
from safelight.library.files.originals import StorageRoot
from safelight.library.files.roots import own_folders
from safelight.library.walk.walker import Walker


async def open_walk(crawl: Attempt) -> Walker:
    if not crawl.root.is_dir():
        raise HandlerFailed(
            f"the storage root {crawl.configured_root} is missing or not a folder "
            "(is the share mounted?); nothing was changed"
        )
    settings = crawl.settings
    try:
        # Resolved once (above), then held open: everything below it is reached
        # from this descriptor, through no symbolic link.
        crawl.storage = await asyncio.to_thread(StorageRoot, crawl.root)
    except OSError as error:
        raise handler_failure(
            f"the storage root {crawl.configured_root} cannot be opened: "
            f"{describe_os_error(error)}; nothing was changed",
            error,
        ) from error
    own = await asyncio.to_thread(own_folders, settings.home, settings.proxies)
    crawl.walker = Walker(
        crawl.storage, own, follow_links_inside_root=settings.follow_links_inside_root
    )
    return crawl.walker


async def resolve_config(
    ctx: HandlerContext, services: Services
) -> tuple[UUID, Path, dict[str, FailedFile]]:
    """The item's config (it must exist and be active), its root as configured, and the
    files the last crawls recorded an error for, by path; the root and the proxy root
    checked."""
    config_id = config_id_of(ctx)
    async with services.pool.connection() as conn:
        config = await active_config(conn, config_id)
        failed = await assets.failed_files(conn, config_id)
    # Before the first write: the config or the settings may have changed since the
    # Worker started (library.files.roots, library.proxystore.proxyroot).
    await check_config_root(services, Path(config.root_path))
    await check_proxy_root(services)
    return config_id, Path(config.root_path), failed
