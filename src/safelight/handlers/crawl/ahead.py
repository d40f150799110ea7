"""The walk in a thread of its own, a bounded number of steps ahead of the crawl."""

from __future__ import annotations

import asyncio
import threading

from safelight.library.walk.walker import WalkBatch, Walker

WALK_AHEAD = 2
"""Steps the walk may list ahead of the batch the crawl takes (``WalkAhead``)."""


class WalkAhead:
    """The walk in a thread of its own, up to ``WALK_AHEAD`` steps ahead of the batch
    the crawl takes (``next``): its system calls run while the crawl compares the batch
    before, and a batch is ready when the crawl wants it. The walk only lists: the
    crawl writes at a path only once it has taken the batch that holds it.

    On leaving, the thread is stopped at its next step and waited for, whatever ended
    the walk (a cancellation too), before anything closes the storage it lists.
    """

    def __init__(self, walker: Walker) -> None:
        self._walker = walker
        self._loop = asyncio.get_running_loop()
        self._batches: asyncio.Queue[tuple[WalkBatch, bool] | BaseException] = asyncio.Queue()
        self._room = threading.Semaphore(WALK_AHEAD)
        self._stop = threading.Event()
        self._ended: asyncio.Future[None] = self._loop.create_future()

    async def __aenter__(self) -> WalkAhead:
        threading.Thread(target=self._run, name="safelight-walk", daemon=True).start()
        return self

    async def __aexit__(self, *_: object) -> None:
        self._stop.set()
        self._room.release()  # a thread waiting for room sees the stop
        cancelled = False
        while not self._ended.done():
            try:
                await asyncio.shield(self._ended)
            except asyncio.CancelledError:
                cancelled = True  # still waited for: it may be listing the storage
        if cancelled:
            raise asyncio.CancelledError

    async def next(self) -> tuple[WalkBatch, bool]:
        """The next step's batch, and whether the walk is done with it."""
        got = await self._batches.get()
        if isinstance(got, BaseException):
            raise got
        self._room.release()
        return got

    def _run(self) -> None:
        def give(got: tuple[WalkBatch, bool] | BaseException) -> None:
            self._loop.call_soon_threadsafe(self._batches.put_nowait, got)

        try:
            while True:
                self._room.acquire()
                if self._stop.is_set():
                    return
                self._walker.step()
                done = self._walker.done
                give((self._walker.take_batch(), done))
                if done:
                    return
        except BaseException as error:  # the crawl's to raise (RootUnavailable, a bug)
            give(error)
        finally:
            # Set once, here only; never cancelled (``__aexit__`` waits through a shield).
            self._loop.call_soon_threadsafe(self._ended.set_result, None)
