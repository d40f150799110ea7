"""``proxy_deletion``: delete given proxy files and their rows.

Payload: ``{"paths": [paths relative to the proxy root]}`` or ``{"asset_ids": [ids]}``.
Only names of the proxy layout are deleted (``layout.parse_proxy_name``), each in the
folder of its own asset and, when the item names a config, of that config. The whole
payload is checked before the first unlink, with every row it reaches (by asset id),
and every path walked without following a link: a bad entry fails the item with
nothing done. With asset ids, a file that a row of another asset still names (a legacy
name two assets of one content shared, ADR 0016) keeps its file. Deletes go through
directory descriptors (``proxytree``): a link swapped in meanwhile is refused and
reported in the result, never followed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

from pydantic import Field, model_validator

from safelight.handlers.contract import (
    HandlerContext,
    MalformedPayload,
    stop_if_cancelled,
)
from safelight.handlers.guards import check_proxy_root
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import Payload
from safelight.handlers.services import Services
from safelight.library.catalogue import assets, proxies
from safelight.library.proxystore.layout import parse_proxy_name
from safelight.library.proxystore.proxytree import UnsafeProxyPath, delete_file, inspect
from safelight.work.kinds import Scope

_BATCH = 100
"""Files per fenced transaction: short transactions, so the heartbeat never waits long."""


@dataclass
class _Tally:
    files_deleted: int = 0
    rows_deleted: int = 0
    missing: int = 0
    refused: list[dict[str, str]] = field(default_factory=list)


class ProxyDeletionPayload(Payload):
    """Exactly one of the two: the files by path, or every proxy of some assets."""

    paths: list[str] | None = None
    """Paths relative to the proxy root (each checked on disk by the handler)."""
    asset_ids: list[Annotated[int, Field(gt=0)]] | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ProxyDeletionPayload:
        given = self.model_fields_set & {"paths", "asset_ids"}
        if len(given) != 1:
            raise ValueError('it takes exactly one of "paths", "asset_ids"')
        (name,) = given
        if getattr(self, name) is None:
            raise ValueError(f'"{name}" must be a list, not null')
        return self


async def run_proxy_deletion(
    ctx: HandlerContext, services: Services, payload: ProxyDeletionPayload
) -> dict[str, Any]:
    root = services.settings.proxies
    config_id = ctx.item.storage_config_id
    await check_proxy_root(services)
    tally = _Tally()
    if payload.paths is not None:
        paths = _relative_paths(payload.paths, root, config_id)
        for start in range(0, len(paths), _BATCH):
            stop_if_cancelled(ctx)
            batch = paths[start : start + _BATCH]
            async with ctx.fenced() as conn:
                tally.rows_deleted += await proxies.delete_by_path(conn, batch)
                for path in batch:
                    _delete(ctx, root, path, tally)
    else:
        assert payload.asset_ids is not None  # exactly one of the two (the model)
        asset_ids = sorted(set(payload.asset_ids))
        async with services.pool.connection() as conn:
            owners = await assets.configs_of(conn, asset_ids)
            if config_id is not None:
                foreign = sorted(a for a, c in owners.items() if c != config_id)
                if foreign:
                    raise MalformedPayload(
                        f"assets {foreign} are not of storage config {config_id}; refused"
                    )
            rows = await proxies.of_assets(conn, sorted(owners))
            _check_rows(rows, root)  # all of them, before the first unlink
        tally.missing += len(set(asset_ids) - set(owners))
        known = sorted(owners)
        for start in range(0, len(known), _BATCH):
            stop_if_cancelled(ctx)
            async with ctx.fenced() as conn:
                rows = await proxies.of_assets(conn, known[start : start + _BATCH])
                # Again in the fence: rows added since the first check are checked too.
                _check_rows(rows, root)
                await proxies.delete_by_id(conn, [r[0] for r in rows])
                tally.rows_deleted += len(rows)
                paths = sorted({r[2] for r in rows if r[2] is not None})
                still_named = await proxies.paths_named(conn, paths)
                for path in paths:
                    if path not in still_named:
                        _delete(ctx, root, path, tally)
    if tally.refused:
        ctx.logger.warning(
            "proxy deletion: %d file(s) left alone (first: %s: %s)",
            len(tally.refused),
            tally.refused[0]["path"],
            tally.refused[0]["reason"],
        )
    return {
        "files_deleted": tally.files_deleted,
        "rows_deleted": tally.rows_deleted,
        "missing": tally.missing,
        "refused": tally.refused,
    }


PROXY_DELETION = Kind(
    "proxy_deletion",
    Scope.OPTIONAL,
    run_proxy_deletion,
    payload=ProxyDeletionPayload,
)


def _delete(ctx: HandlerContext, root: Path, path: str, tally: _Tally) -> None:
    try:
        deleted = delete_file(root, path, ctx.ensure_alive)
    except UnsafeProxyPath as error:
        # Checked before, so swapped in since: reported, and never followed.
        tally.refused.append({"path": path, "reason": error.reason})
        return
    if deleted:
        tally.files_deleted += 1
    else:
        tally.missing += 1


def _check_rows(rows: list[tuple[Any, ...]], root: Path) -> None:
    """Every path these proxy rows name is a file of its own asset's proxy folder, and no
    link leads to it: else the item fails before anything is deleted."""
    for _id, asset_id, path, asset_config, content_hash in rows:
        if path is None:
            continue
        name = parse_proxy_name(path)
        if name is None or (name.config_id, name.content_hash) != (asset_config, content_hash):
            raise MalformedPayload(
                f"asset {asset_id}'s proxy row names {path!r}, which is not in its own proxy "
                "folder; refused, nothing deleted"
            )
        _check_file(path, _reachable(root, path))


def _reachable(root: Path, path: str) -> os.stat_result | None:
    """The path's own ``lstat`` (None: missing), reached without following a link."""
    try:
        return inspect(root, path)
    except UnsafeProxyPath as error:
        raise MalformedPayload(f"proxy path {path!r} refused: {error.reason}") from None


def _check_file(path: str, st: os.stat_result | None) -> None:
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise MalformedPayload(f"proxy path {path!r} refused: it is not a file")


def _relative_paths(value: list[str], root: Path, config_id: UUID | None) -> list[str]:
    """Each path, checked: a name of the proxy layout (of the item's config, when it has
    one), reached without a link, a file or missing."""
    checked: list[str] = []
    for raw in value:
        if not raw or os.path.isabs(raw):
            raise MalformedPayload(f"proxy path {raw!r} must be relative to the proxy root")
        parts = raw.split("/")
        if any(part in ("", ".") for part in parts):
            raise MalformedPayload(f"proxy path {raw!r} refused: not a plain relative path")
        if ".." in parts:
            raise MalformedPayload(f"proxy path {raw!r} refused: it leads outside the proxy root")
        st = _reachable(root, raw)
        if config_id is not None and parts[0] != str(config_id):
            raise MalformedPayload(
                f"proxy path {raw!r} refused: it is not a file under the folder of storage "
                f"config {config_id}"
            )
        if parse_proxy_name(raw) is None:
            raise MalformedPayload(
                f"proxy path {raw!r} refused: it is not a file under a proxy folder "
                "(<config id>/<hash[0:2]>/<hash>/<type>.<ext>)"
            )
        _check_file(raw, st)
        checked.append(raw)
    return sorted(set(checked))
