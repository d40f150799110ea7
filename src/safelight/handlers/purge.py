"""``purge`` (scoped): delete the proxy files and rows of a config's soft-deleted assets.

Each asset is purged in its own fenced transaction (short, so the attempt's heartbeat
is never held up for long), and re-checked there just before anything is deleted.
"""

from __future__ import annotations

from typing import Any

from safelight.handlers.contract import HandlerContext, config_id_of, stop_if_cancelled
from safelight.handlers.guards import check_proxy_root
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import assets
from safelight.library.proxystore.purge import purge_asset
from safelight.work.kinds import Scope


async def run_purge(ctx: HandlerContext, services: Services, payload: NoPayload) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    await check_proxy_root(services)
    async with services.pool.connection() as conn:
        ids = await assets.deleted_of_config(conn, config_id)
    purged = files_deleted = kept_shared = 0
    refused: list[dict[str, str]] = []
    ctx.progress(total=len(ids), purged=0)
    for asset_id in ids:
        stop_if_cancelled(ctx)
        async with ctx.fenced() as conn:
            outcome = await purge_asset(
                conn, config_id, asset_id, services.settings.proxies, ctx.ensure_alive
            )
        purged += outcome.purged
        files_deleted += outcome.files_deleted
        kept_shared += outcome.kept_shared
        refused.extend({"path": path, "reason": reason} for path, reason in outcome.refused)
        ctx.progress(total=len(ids), purged=purged)
    if refused:
        ctx.logger.warning(
            "purge: %d file(s) named by proxy rows were left alone (first: %s: %s)",
            len(refused),
            refused[0]["path"],
            refused[0]["reason"],
        )
    return {
        "purged": purged,
        "files_deleted": files_deleted,
        "kept_shared": kept_shared,
        "refused": refused,
    }


PURGE = Kind("purge", Scope.REQUIRED, run_purge)
