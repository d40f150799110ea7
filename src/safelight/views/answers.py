"""What a cancel or a retry of one work item answers, in the same words on the command
line (``safelight cancel``, ``items retry ID``) and on the dashboard (its buttons and
``POST /api/items/{id}/cancel|retry``): both ask the store here and print or send the
sentence; only how each front end shows a refusal (an exit status, an HTTP status)
stays its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from safelight.work.model import CancelResult, RetryResult, WorkItem
from safelight.work.store import WorkStore

R = TypeVar("R", CancelResult, RetryResult)


@dataclass(frozen=True, slots=True)
class Answer(Generic[R]):
    """The store's answer and the sentence that tells it."""

    result: R
    message: str


def no_item(item_id: int) -> str:
    """The answer for an item that does not exist, and for one the viewer may not see
    (ADR 0044: nothing tells the two apart)."""
    return f"there is no work item {item_id}"


def cancel_message(result: CancelResult, item_id: int) -> str:
    if result is CancelResult.CANCELLED:
        return f"cancelled item {item_id}"
    if result is CancelResult.REQUESTED:
        return (
            f"asked item {item_id} to stop: it is running, and its attempt stops as soon as "
            "its Worker hears, at the latest at its next heartbeat"
        )
    if result is CancelResult.FINISHED:
        return f"item {item_id} had already finished; nothing to cancel"
    return no_item(item_id)


def retry_message(result: RetryResult, item_id: int, item: WorkItem | None) -> str:
    """``item``: the item as read after the retry, which names what it is instead (its
    status, its dedup key); None if it is gone."""
    if result is RetryResult.RETRIED:
        return f"item {item_id} is queued again, due now"
    if item is None:
        return no_item(item_id)
    if result is RetryResult.KEY_QUEUED:
        return (
            f"item {item_id} stays failed: its dedup key {item.dedup_key} already has a "
            "queued item, which does its work"
        )
    return f"item {item_id} is {item.status.value}, not failed: nothing to retry"


async def cancel(store: WorkStore, item_id: int) -> Answer[CancelResult]:
    """Cancel a queued item at once, or ask a running one to stop."""
    result = await store.request_cancel(item_id)
    return Answer(result, cancel_message(result, item_id))


async def retry(store: WorkStore, item_id: int) -> Answer[RetryResult]:
    """Put a failed item back to the queue, due now."""
    result = await store.retry_failed(item_id)
    item = None if result is RetryResult.RETRIED else await store.get(item_id)
    return Answer(result, retry_message(result, item_id, item))
