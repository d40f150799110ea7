"""What one attempt runs with: the store it writes through and the handler's context.

The handler contract, which the self-stop's safety margin rests on:

- Cancellation is cooperative. The executor cancels the handler's task; the handler
  honours it between steps. CPU-bound work runs in threads, which cannot be
  interrupted, so a handler keeps each step in a thread short and checks in between.
- Right before every file write or delete, the handler calls
  :meth:`HandlerContext.ensure_alive`. It raises at once, without asking the database,
  when the attempt must stop, so no file changes after the attempt lost its claim.
- Database writes of the handler go through :meth:`HandlerContext.fenced`, a transaction
  that first checks the attempt still owns its item.
- Subprocesses are started so that cancelling kills their whole process tree.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from safelight.core.clock import Clock
from safelight.work.model import Beat, WorkItem

if TYPE_CHECKING:
    from psycopg import AsyncConnection


class AttemptStore(Protocol):
    """The store calls of one attempt, each fenced by ``(item_id, attempt)`` and
    ``status = 'running'``: a stale attempt's write changes nothing.

    Implemented by :class:`safelight.work.store.WorkStore`.
    """

    async def heartbeat(
        self,
        item_id: int,
        attempt: int,
        lease_seconds: float,
        progress: Mapping[str, Any] | None = None,
    ) -> Beat:
        """Renew the lease and learn whether to go on; save ``progress`` with it unless
        None. May raise, or hang forever."""
        ...

    async def save_progress(self, item_id: int, attempt: int, progress: Mapping[str, Any]) -> bool:
        """Save what the attempt has done (``{"attempt": n, "counts": {...}}``);
        ``False`` if the attempt had lost the item."""
        ...

    def complete(
        self, item_id: int, attempt: int, result: dict[str, Any] | None
    ) -> Awaitable[bool]:
        """Running → succeeded; ``False`` if the attempt had lost the item.

        This and :meth:`fail` and :meth:`cancel` return an awaitable, a coroutine or
        (:class:`~safelight.work.store.WorkStore`'s) a future, which the executor can
        bound by a timer without a task of its own."""
        ...

    def fail(self, item_id: int, attempt: int, error: str) -> Awaitable[bool]:
        """Running → failed, for good; ``False`` if the attempt had lost the item."""
        ...

    async def retry_later(
        self, item_id: int, attempt: int, error: str, delay_seconds: float
    ) -> bool:
        """Running → queued, not claimed again for ``delay_seconds``, counting a retry
        (superseded by a queued item of its dedup key); ``False`` if lost."""
        ...

    async def defer(self, item_id: int, attempt: int, note: str, delay_seconds: float) -> bool:
        """Running → queued, not claimed again for ``delay_seconds``, counting neither
        a retry nor a stall (superseded by a queued item of its dedup key); ``False``
        if lost."""
        ...

    async def retry(self, item_id: int, attempt: int, error: str) -> bool:
        """Running → queued in its place counting a stall (failed at max_stalls, or
        superseded by a queued item of its dedup key); ``False`` if lost."""
        ...

    def cancel(self, item_id: int, attempt: int) -> Awaitable[bool]:
        """A cancel-requested running item → cancelled; ``False`` if lost."""
        ...

    async def release(self, item_id: int, attempt: int) -> bool:
        """Running → queued without counting a stall (graceful shutdown); ``False`` if lost."""
        ...

    def fenced(
        self, item_id: int, attempt: int
    ) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A transaction that first checks the attempt still owns its item, else raises
        :class:`safelight.work.errors.AttemptLost`."""
        ...


ProgressCallback = Callable[[WorkItem, Mapping[str, int]], object]


class HandlerContext:
    """Everything a handler gets for one attempt of one work item.

    ``cancelled`` is set as soon as the attempt must stop, for any reason; the handler's
    task is cancelled at the same moment. ``winding_down`` asks for a clean stop
    instead: no new work, the started work finished (heavy hours, ADR 0060).
    ``logger`` adds ``item_id``, ``kind`` and ``attempt`` to every record. Use it from
    the event loop's thread only: neither :meth:`ensure_alive` nor :meth:`progress` is
    thread-safe.
    """

    __slots__ = (
        "_ensure_alive",
        "_on_progress",
        "_store",
        "cancelled",
        "clock",
        "item",
        "logger",
        "winding_down",
    )

    def __init__(
        self,
        *,
        item: WorkItem,
        clock: Clock,
        store: AttemptStore,
        logger: logging.LoggerAdapter[logging.Logger],
        cancelled: asyncio.Event,
        ensure_alive: Callable[[], None],
        winding_down: asyncio.Event,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.item = item
        # Set when the attempt should finish what it has started and stop, keeping its
        # work (its kind's heavy hours ended: ADR 0060). Not a stop: the handler may
        # ignore it and run to its end; one that honours it raises ``WoundDown`` once
        # its started work is done, and the item goes on at the next window.
        self.winding_down = winding_down
        self.clock = clock
        self.logger = logger
        self.cancelled = cancelled
        self._store = store
        self._ensure_alive = ensure_alive
        self._on_progress = on_progress

    def ensure_alive(self) -> None:
        """Raise :class:`~safelight.work.errors.AttemptStopped` if the attempt must stop.

        Call it right before every file write or delete. It answers from memory, never
        from the database, so it is cheap and works while the database is unreachable;
        it also notices a process that was frozen past its self-stop deadline before the
        timer that would have stopped it had a chance to run.
        """
        self._ensure_alive()

    def fenced(self) -> AbstractAsyncContextManager[AsyncConnection[Any]]:
        """A transaction in which this attempt provably still owns its item.

        Checks :meth:`ensure_alive` first, so a stopped attempt does not even open one.
        """
        self.ensure_alive()
        return self._store.fenced(self.item.id, self.item.attempt)

    def progress(self, **counters: int) -> None:
        """Report progress counters (``files=120, bytes=...``) to the Worker; cheap.

        Cumulative: each report replaces the last. The executor saves the last one with
        the item (with the next heartbeat, and when the attempt ends, fenced like every
        write of the attempt), so what an interrupted attempt did can still be read; a
        handler reports its counters once more when it stops, and counts only what it
        has committed. A failing progress callback is logged and otherwise ignored:
        progress is informational and must never end the work.
        """
        if self._on_progress is None:
            return
        try:
            self._on_progress(self.item, counters)
        except Exception:
            self.logger.warning("progress callback failed", exc_info=True)


Handler = Callable[[HandlerContext], Coroutine[Any, Any, dict[str, Any] | None]]
"""``async def handler(ctx) -> dict | None``: the result is stored with the item."""
