"""What the dashboard's buttons do, through the same store calls as the CLI's commands
(``items cancel``, ``items retry``, ``run``'s crawl, ``purge``); the API answers each
with its :class:`Done`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from uuid import UUID

from safelight.handlers import CRAWL, PURGE
from safelight.handlers.kind import Kind
from safelight.work.errors import InvalidWorkItem
from safelight.work.model import CancelResult, RetryResult
from safelight.work.store import WorkStore

R = TypeVar("R", CancelResult, RetryResult)


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


# What each store answer means to the person who pressed the button.
_CANCELLED: Mapping[CancelResult, tuple[int, str]] = {
    CancelResult.CANCELLED: (200, "cancelled item {id}"),
    CancelResult.REQUESTED: (
        200,
        "asked item {id} to stop: its attempt stops at its next heartbeat",
    ),
    CancelResult.FINISHED: (409, "item {id} had already finished"),
    CancelResult.NOT_FOUND: (404, "there is no work item {id}"),
}
_RETRIED: Mapping[RetryResult, tuple[int, str]] = {
    RetryResult.RETRIED: (200, "item {id} is queued again, due now"),
    RetryResult.KEY_QUEUED: (
        409,
        "item {id} stays failed: an item of its dedup key is queued already, which does its work",
    ),
    RetryResult.NOT_FAILED: (409, "item {id} is not failed: nothing to retry"),
    RetryResult.NOT_FOUND: (404, "there is no work item {id}"),
}


def _answer(table: Mapping[R, tuple[int, str]], result: R, item_id: int) -> Done:
    status_code, text = table[result]
    return Done(status_code, result.value, text.format(id=item_id), item_id)


async def cancel_item(store: WorkStore, item_id: int) -> Done:
    return _answer(_CANCELLED, await store.request_cancel(item_id), item_id)


async def retry_item(store: WorkStore, item_id: int) -> Done:
    return _answer(_RETRIED, await store.retry_failed(item_id), item_id)


# An item the viewer may not see is answered as the store answers one that does not
# exist, from the same table: nothing tells the two apart (ADR 0044).
def cancel_unseen(item_id: int) -> Done:
    return _answer(_CANCELLED, CancelResult.NOT_FOUND, item_id)


def retry_unseen(item_id: int) -> Done:
    return _answer(_RETRIED, RetryResult.NOT_FOUND, item_id)


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
