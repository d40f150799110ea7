"""Purging one soft-deleted asset: its proxy files, then its rows.

The proxy folder derives from (config, content hash), so a live asset with the same
content, ingested again after this one was deleted, shares its folder. Since proxy
names carry the attempt that wrote them (ADR 0016), that asset has files of its own,
under other names: the purge deletes exactly the files the dead asset's rows name, and
of those only the ones no other row names (two assets of one content shared their
legacy ``<type>.<ext>`` names). It re-checks both, with the asset row locked inside the
caller's fenced transaction: that the asset is still deleted, and which of its files
another row names. (ADR 0008 keeps a crawl of the config from running beside the
purge, so the answer cannot change before the transaction commits.) A folder goes only
once empty, so a live asset's files in it keep it.

A stale purge whose late ``unlink`` lands after a newer attempt of its config wrote
this content's proxies removes only a name its rows named: a file of the dead asset
(the newer attempt wrote its own names), never one of the newer attempt's files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg

from safelight.library.catalogue import assets, proxies
from safelight.library.proxystore.layout import parse_proxy_name, proxy_folder
from safelight.library.proxystore.proxytree import (
    UnsafeProxyPath,
    delete_file,
    remove_empty_folders,
)


@dataclass(frozen=True, slots=True)
class PurgeOutcome:
    purged: bool
    """The asset's rows were deleted (False: it was no longer a soft-deleted asset)."""
    files_deleted: int = 0
    kept_shared: bool = False
    """Another asset's row names one of its files (a legacy name that two assets of one
    content shared): that file was kept."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Files a row named that were left alone, with why: outside the asset's own proxy
    folder, or a symbolic link."""


async def purge_asset(
    conn: psycopg.AsyncConnection[Any],
    config_id: UUID,
    asset_id: int,
    proxy_root: Path,
    ensure_alive: Callable[[], None],
) -> PurgeOutcome:
    """Purge one asset inside the caller's fenced transaction on ``conn``.

    Only files in the asset's own folder (``<config>/<hash[0:2]>/<hash>/``, names of the
    layout) are deleted, whatever its rows say: a row naming another config's proxy, or
    anything else, is reported and left alone. Folders go only once empty.
    """
    content_hash = await assets.lock_deleted(conn, config_id, asset_id)
    if content_hash is None:
        return PurgeOutcome(purged=False)
    rows = await proxies.of_asset(conn, asset_id)
    # Its own rows go first, so that what still names one of its paths is another's.
    await proxies.delete_by_id(conn, [r[0] for r in rows])
    paths = [path for _proxy_id, _proxy_type, path in rows if path is not None]
    named_elsewhere = await proxies.paths_named(conn, paths)
    files_deleted = 0
    refused: list[tuple[str, str]] = []
    kept_shared = False
    for path in paths:
        name = parse_proxy_name(path)
        if name is None or (name.config_id, name.content_hash) != (config_id, content_hash):
            refused.append((path, "not a file of this asset's proxy folder: left alone"))
            continue
        if path in named_elsewhere:
            kept_shared = True
            continue
        try:
            files_deleted += delete_file(proxy_root, path, ensure_alive)
        except UnsafeProxyPath as error:
            refused.append((path, error.reason))
    remove_empty_folders(proxy_root, proxy_folder(config_id, content_hash), ensure_alive)
    await assets.delete_asset(conn, asset_id)
    return PurgeOutcome(
        purged=True,
        files_deleted=files_deleted,
        kept_shared=kept_shared,
        refused=refused,
    )
