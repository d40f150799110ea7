"""Purging one soft-deleted asset: its proxy files, then its rows.

The proxy folder derives from (config, content hash), so a live asset with the same
content, ingested again after this one was deleted, owns the very same files. The
purge therefore re-checks, with the asset row locked inside the caller's fenced
transaction, that the asset is still deleted and that no live asset of its config
shares its content; if one does, only the dead asset's rows go and the files stay.
(ADR 0008 keeps a crawl of the config from running beside the purge, so the answer
cannot change before the transaction commits.)
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg

from safelight.library.assets import QUERIES
from safelight.library.errors import PathOutsideRoot
from safelight.library.paths import confined, proxy_dir
from safelight.work.journal import side_effect


@dataclass(frozen=True, slots=True)
class PurgeOutcome:
    purged: bool
    """The asset's rows were deleted (False: it was no longer a soft-deleted asset)."""
    files_deleted: int = 0
    kept_shared: bool = False
    """A live asset shares the content: its proxy files were kept."""


async def purge_asset(
    conn: psycopg.AsyncConnection[Any],
    config_id: UUID,
    asset_id: int,
    proxy_root: Path,
    ensure_alive: Callable[[], None],
) -> PurgeOutcome:
    """Purge one asset inside the caller's fenced transaction on ``conn``."""
    cur = await conn.execute(
        QUERIES["asset_lock_deleted"], {"id": asset_id, "config_id": config_id}
    )
    row = await cur.fetchone()
    if row is None:
        return PurgeOutcome(purged=False)
    content_hash: str = row[1]
    cur = await conn.execute(
        QUERIES["asset_live_with_hash"], {"config_id": config_id, "content_hash": content_hash}
    )
    shared = await cur.fetchone() is not None
    files_deleted = 0
    if not shared:
        cur = await conn.execute(QUERIES["proxies_of_asset"], {"asset_id": asset_id})
        for _proxy_id, _proxy_type, path in await cur.fetchall():
            if path is not None and delete_proxy_file(proxy_root, path, ensure_alive):
                files_deleted += 1
        remove_empty_folders(
            proxy_dir(proxy_root, config_id, content_hash), proxy_root, ensure_alive
        )
    await conn.execute(QUERIES["asset_delete"], {"id": asset_id})
    return PurgeOutcome(purged=True, files_deleted=files_deleted, kept_shared=shared)


def delete_proxy_file(proxy_root: Path, relative: str, ensure_alive: Callable[[], None]) -> bool:
    """Delete one proxy file confined to ``proxy_root``; False if it was already gone.

    Raises ``PathOutsideRoot`` for a path that would leave the proxy root.
    """
    target = confined(proxy_root, relative)
    if target == Path(os.path.realpath(proxy_root)):
        raise PathOutsideRoot(f"{relative!r} is the proxy root itself")
    try:
        with side_effect("delete", target, ensure_alive):
            target.unlink()
    except FileNotFoundError:
        return False
    return True


def remove_empty_folders(folder: Path, proxy_root: Path, ensure_alive: Callable[[], None]) -> None:
    """Remove ``folder`` and its parents up to (not including) ``proxy_root`` while empty."""
    root = Path(os.path.realpath(proxy_root))
    current = Path(os.path.realpath(folder))
    while current != root and current.is_relative_to(root):
        try:
            with side_effect("rmdir", current, ensure_alive):
                current.rmdir()
        except FileNotFoundError:
            pass
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST):
                return
            raise
        current = current.parent
