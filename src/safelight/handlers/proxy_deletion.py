"""``proxy_deletion``: delete given proxy files and their rows.

Payload: ``{"paths": [paths relative to the proxy root]}`` or ``{"asset_ids": [ids]}``.
Every path is confined to the proxy root, and to ``<config id>/`` when the item names a
config; the whole payload is checked before anything is deleted, so a bad entry fails
the item with nothing done. With asset ids, a file that a row of another asset still
names (a live asset with the same content shares the folder) keeps its file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

from safelight.handlers.contract import (
    HandlerContext,
    MalformedPayload,
    payload_keys,
    stop_if_cancelled,
)
from safelight.handlers.services import Services
from safelight.library.assets import QUERIES
from safelight.library.errors import PathOutsideRoot
from safelight.library.paths import confined
from safelight.library.purge import delete_proxy_file

_KEYS = frozenset({"paths", "asset_ids"})
_BATCH = 100
"""Files per fenced transaction: short transactions, so the heartbeat never waits long."""


@dataclass
class _Tally:
    files_deleted: int = 0
    rows_deleted: int = 0
    missing: int = 0


async def run_proxy_deletion(ctx: HandlerContext, services: Services) -> dict[str, Any]:
    payload = payload_keys(ctx, _KEYS)
    if ("paths" in payload) == ("asset_ids" in payload):
        raise MalformedPayload('a proxy_deletion payload takes exactly one of "paths", "asset_ids"')
    root = services.settings.proxies
    config_id = ctx.item.storage_config_id
    tally = _Tally()
    if "paths" in payload:
        paths = _relative_paths(payload["paths"], root, config_id)
        for start in range(0, len(paths), _BATCH):
            stop_if_cancelled(ctx)
            batch = paths[start : start + _BATCH]
            async with ctx.fenced() as conn:
                cur = await conn.execute(QUERIES["proxies_delete_by_path"], {"paths": batch})
                tally.rows_deleted += cur.rowcount
                for path in batch:
                    _delete(ctx, root, path, tally)
    else:
        asset_ids = _asset_ids(payload["asset_ids"])
        async with services.pool.connection() as conn:
            cur = await conn.execute(QUERIES["assets_config_of"], {"asset_ids": asset_ids})
            owners = {int(row[0]): row[1] for row in await cur.fetchall()}
        if config_id is not None:
            foreign = sorted(a for a, c in owners.items() if c != config_id)
            if foreign:
                raise MalformedPayload(
                    f"assets {foreign} are not of storage config {config_id}; refused"
                )
        tally.missing += len(set(asset_ids) - set(owners))
        known = sorted(owners)
        for start in range(0, len(known), _BATCH):
            stop_if_cancelled(ctx)
            async with ctx.fenced() as conn:
                cur = await conn.execute(
                    QUERIES["proxies_of_assets"], {"asset_ids": known[start : start + _BATCH]}
                )
                rows = await cur.fetchall()
                await conn.execute(QUERIES["proxies_delete_by_id"], {"ids": [r[0] for r in rows]})
                tally.rows_deleted += len(rows)
                paths = sorted({r[2] for r in rows if r[2] is not None})
                cur = await conn.execute(QUERIES["proxy_paths_named"], {"paths": paths})
                still_named = {r[0] for r in await cur.fetchall()}
                for path in paths:
                    if path not in still_named:
                        _delete(ctx, root, path, tally)
    return {
        "files_deleted": tally.files_deleted,
        "rows_deleted": tally.rows_deleted,
        "missing": tally.missing,
    }


def _delete(ctx: HandlerContext, root: Path, path: str, tally: _Tally) -> None:
    if delete_proxy_file(root, path, ctx.ensure_alive):
        tally.files_deleted += 1
    else:
        tally.missing += 1


def _relative_paths(value: object, root: Path, config_id: UUID | None) -> list[str]:
    """Each path, checked and normalised to the form proxy rows use (relative, posix)."""
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise MalformedPayload('proxy_deletion "paths" must be a list of strings')
    real_root = Path(os.path.realpath(root))
    scope = real_root / str(config_id) if config_id is not None else real_root
    normalised: list[str] = []
    for raw in value:
        if not raw or os.path.isabs(raw):
            raise MalformedPayload(f"proxy path {raw!r} must be relative to the proxy root")
        try:
            target = confined(real_root, raw)
        except PathOutsideRoot as error:
            raise MalformedPayload(f"proxy path {raw!r} refused: {error.reason}") from None
        if target == scope or not target.is_relative_to(scope):
            where = f"the folder of storage config {config_id}" if config_id else "the proxy root"
            raise MalformedPayload(f"proxy path {raw!r} refused: it is not a file under {where}")
        if target.is_dir():
            raise MalformedPayload(f"proxy path {raw!r} refused: it is a folder")
        normalised.append(target.relative_to(real_root).as_posix())
    return sorted(set(normalised))


def _asset_ids(value: object) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in value
    ):
        raise MalformedPayload('proxy_deletion "asset_ids" must be a list of positive integers')
    return sorted(set(value))
