"""What the dashboard's buttons do, through the same store calls as the CLI's commands
(``items cancel``, ``items retry``, ``run``'s crawl, ``purge``); the API answers each
with its :class:`Done`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID

from safelight.handlers import CRAWL, PURGE
from safelight.handlers.kind import Kind
from safelight.work.errors import InvalidWorkItem
from safelight.work.model import CancelResult, RetryResult
from safelight.work.store import WorkStore


@dataclass(frozen=True, slots=True)
class Done:
    """An action's answer: its HTTP status, a one-word outcome and a sentence."""

    status_code: int
    outcome: str
    message: str
    item_id: int | None = None

    def document(self) -> dict[str, Any]:
        return {
            "ok": self.status_code < 400,
            "outcome": self.outcome,
            "message": self.message,
            "item_id": self.item_id,
        }


async def cancel_item(store: WorkStore, item_id: int) -> Done:
    result = await store.request_cancel(item_id)
    if result is CancelResult.CANCELLED:
        return Done(200, result.value, f"cancelled item {item_id}", item_id)
    if result is CancelResult.REQUESTED:
        return Done(
            200,
            result.value,
            f"asked item {item_id} to stop: its attempt stops at its next heartbeat",
            item_id,
        )
    if result is CancelResult.FINISHED:
        return Done(409, result.value, f"item {item_id} had already finished", item_id)
    return Done(404, result.value, f"there is no work item {item_id}", item_id)


async def retry_item(store: WorkStore, item_id: int) -> Done:
    result = await store.retry_failed(item_id)
    if result is RetryResult.RETRIED:
        return Done(200, result.value, f"item {item_id} is queued again, due now", item_id)
    if result is RetryResult.KEY_QUEUED:
        return Done(
            409,
            result.value,
            f"item {item_id} stays failed: an item of its dedup key is queued already, "
            "which does its work",
            item_id,
        )
    if result is RetryResult.NOT_FAILED:
        return Done(409, result.value, f"item {item_id} is not failed: nothing to retry", item_id)
    return Done(404, result.value, f"there is no work item {item_id}", item_id)


async def _queue(store: WorkStore, kind: Kind[Any], config_id: UUID, what: str) -> Done:
    try:
        item_id = await kind.enqueue_for(store, config_id)
    except InvalidWorkItem as error:  # disabled (the route answers 404 for no config)
        return Done(409, "refused", str(error))
    return Done(200, "queued", f"{what} of config {config_id} queued as item {item_id}", item_id)


async def queue_crawl(store: WorkStore, config_id: UUID) -> Done:
    return await _queue(store, CRAWL, config_id, "a crawl")


async def queue_purge(store: WorkStore, config_id: UUID) -> Done:
    return await _queue(store, PURGE, config_id, "a purge")
