"""``work_item_retention`` (unscoped): delete finished work items past their retention."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from safelight.handlers.contract import HandlerContext
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.work.kinds import Scope


async def run_retention(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    retention = timedelta(days=services.settings.work_retention_days)
    # The store deletes only finished items (never this running one), in batches; it
    # takes now from the same clock.
    deleted = await services.store.delete_finished(retention)
    return {"deleted": deleted, "retention_days": services.settings.work_retention_days}


WORK_ITEM_RETENTION = Kind(
    "work_item_retention",
    Scope.FORBIDDEN,
    run_retention,
    interval=lambda settings: settings.retention_interval_seconds,
)
