"""What the dashboard's buttons do, through the same store calls as the CLI's commands
(``items cancel``, ``items retry``, ``run``'s crawl, ``purge``, ``config retry-failed``,
``pause``, ``resume``);
the API answers each with its :class:`Done`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from psycopg_pool import AsyncConnectionPool

from safelight.handlers import CRAWL, PURGE
from safelight.handlers.kind import Kind
from safelight.handlers.proxy_remake import PROXY_REMAKE
from safelight.handlers.proxy_remake import dedup_key as proxy_remake_key
from safelight.library.catalogue import assets
from safelight.library.proxystore.remaking import Mode
from safelight.views import answers
from safelight.words import plural
from safelight.work.errors import InvalidWorkItem
from safelight.work.model import CancelResult, RetryResult
from safelight.work.pausing import Pauses
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


# The HTTP status of each store answer; its sentence is the CLI's (views.answers).
_CANCEL_STATUS: Mapping[CancelResult, int] = {
    CancelResult.CANCELLED: 200,
    CancelResult.REQUESTED: 200,
    CancelResult.FINISHED: 409,
    CancelResult.NOT_FOUND: 404,
}
_RETRY_STATUS: Mapping[RetryResult, int] = {
    RetryResult.RETRIED: 200,
    RetryResult.KEY_QUEUED: 409,
    RetryResult.NOT_FAILED: 409,
    RetryResult.NOT_FOUND: 404,
}


def _done(statuses: Mapping[R, int], answer: answers.Answer[R], item_id: int) -> Done:
    return Done(statuses[answer.result], answer.result.value, answer.message, item_id)


async def cancel_item(store: WorkStore, item_id: int) -> Done:
    return _done(_CANCEL_STATUS, await answers.cancel(store, item_id), item_id)


async def retry_item(store: WorkStore, item_id: int) -> Done:
    return _done(_RETRY_STATUS, await answers.retry(store, item_id), item_id)


# An item the viewer may not see is answered as the store answers one that does not
# exist, in the same words: nothing tells the two apart (ADR 0044).
def cancel_unseen(item_id: int) -> Done:
    unseen = answers.Answer(CancelResult.NOT_FOUND, answers.no_item(item_id))
    return _done(_CANCEL_STATUS, unseen, item_id)


def retry_unseen(item_id: int) -> Done:
    unseen = answers.Answer(RetryResult.NOT_FOUND, answers.no_item(item_id))
    return _done(_RETRY_STATUS, unseen, item_id)


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


NO_FAILED_FILE = "there is no such failed file in this storage config"


async def retry_failed(
    store: WorkStore,
    pool: AsyncConnectionPool[Any],
    config_id: UUID,
    now: datetime,
    *,
    reason: str | None = None,
    path: str | None = None,
) -> Done:
    """ "Try again": the failed files of the config, of one ``reason`` or the one
    ``path`` (None: any) due at ``now`` (the next crawl reads each one, changed or not:
    ADRs 0057, 0058), and that crawl queued. Asked for a reason or a path that matches
    no failed file of the config, a 404 and nothing queued."""
    async with pool.connection() as conn:
        due = await assets.errors_made_due(conn, config_id, now, reason=reason, path=path)
    if due.matched == 0 and (reason is not None or path is not None):
        return Done(404, "not_found", NO_FAILED_FILE)
    done = await _queue(store, CRAWL, config_id, "a crawl")
    if done.status_code >= 400:
        return done
    return Done(
        done.status_code,
        done.outcome,
        f"{plural(due.matched, 'failed file')} will be read again: {done.message}",
        done.item_id,
    )


async def queue_proxy_remake(store: WorkStore, config_id: UUID, mode: Mode) -> Done:
    """ "Remake missing proxies" / "remake all proxies" (ADR 0059): as
    ``safelight proxies remake``, one of each mode queued per config at a time."""
    try:
        item_id = await store.enqueue(
            PROXY_REMAKE.name,
            config_id=config_id,
            dedup_key=proxy_remake_key(config_id, mode),
            payload={"mode": mode.value},
        )
    except InvalidWorkItem as error:  # disabled (the route answers 404 for no config)
        return Done(409, "refused", str(error))
    what = "a remake of its missing proxies" if mode is Mode.MISSING else "a remake of its proxies"
    return Done(200, "queued", f"{what} of config {config_id} queued as item {item_id}", item_id)


async def pause_kind(pauses: Pauses, kind: str, by: str) -> Done:
    """``safelight pause KIND`` (an admin's, the route checks)."""
    if not await pauses.pause_kind(kind, by):
        return Done(200, "unchanged", f"{kind} was paused already")
    return Done(200, "paused", f"paused {kind}: no Worker starts it until it is resumed")


async def resume_kind(pauses: Pauses, kind: str) -> Done:
    if not await pauses.resume_kind(kind):
        return Done(200, "unchanged", f"{kind} was not paused")
    return Done(200, "resumed", f"resumed {kind}")


async def pause_config(pauses: Pauses, config_id: UUID, by: str) -> Done:
    """``safelight pause --config ID`` (its owner's or an admin's, the route checks)."""
    await pauses.pause_config(config_id, by)
    return Done(
        200, "paused", f"paused config {config_id}: no Worker starts its work until resumed"
    )


async def resume_config(pauses: Pauses, config_id: UUID) -> Done:
    await pauses.resume_config(config_id)
    return Done(200, "resumed", f"resumed config {config_id}")
