"""``catalogue_backup`` (unscoped): a backup of the catalogue into the home, rotated
(ADR 0061, ``safelight.db.backups``)."""

from __future__ import annotations

from typing import Any

from safelight.db.backups import back_up_into_home
from safelight.handlers.contract import HandlerContext
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.work.kinds import Scope


async def run_catalogue_backup(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    # Into the home of the Worker that runs it: one machine's, when Workers run on several.
    async with services.pool.connection() as conn:
        path, manifest, removed = await back_up_into_home(
            conn, services.settings.home, services.settings.backups_kept, services.clock.now()
        )
    return {
        "file": str(path),
        "bytes": path.stat().st_size,
        "tables": len(manifest.tables),
        "rows": manifest.rows,
        "removed": [p.name for p in removed],
    }


CATALOGUE_BACKUP = Kind(
    "catalogue_backup",
    Scope.FORBIDDEN,
    run_catalogue_backup,
    interval=lambda settings: settings.backup_interval_seconds,
)
