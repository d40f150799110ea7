"""Group commit for the store: calls made while one is in flight go out together.

A process runs several Workers on one pool. Each claim and each outcome is a statement
and a commit of its own, and at a few milliseconds per item the round trips, the
per-statement work and the commits are most of the cost (docs/benchmarks.md, 3).
A :class:`Batcher` sends the first call at once, as before; calls that arrive while a
batch is in flight wait for it to return and then go out as the next batch, in one
statement. Nothing waits on a timer, so a lone call is as fast as it was, and under
load the batches grow by themselves, as PostgreSQL's own group commit does.

Each call still gets its own answer, and its answer is durable when it comes back:
batching changes how many calls share a statement, never what a call means.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Request = TypeVar("Request")
Answer = TypeVar("Answer")

RunBatch = Callable[[Sequence[Request]], Awaitable[Sequence[Answer]]]


class Batcher(Generic[Request, Answer]):
    """Runs ``run_batch`` on the calls waiting, at most ``max_batch`` at a time.

    ``run_batch`` gets the requests in arrival order and returns one answer for each,
    in the same order; if it raises, every call of that batch raises the same error.
    A call whose caller stopped waiting before its batch was sent is left out of it;
    once sent, the batch runs to its end whatever its callers do (a statement on its
    way may already have applied, exactly as for a call made on its own).
    """

    def __init__(self, run_batch: RunBatch[Request, Answer], *, max_batch: int) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run_batch = run_batch
        self._max_batch = max_batch
        self._waiting: list[tuple[Request, asyncio.Future[Answer]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def call(self, request: Request) -> Answer:
        return await self.submit(request)

    def submit(self, request: Request) -> asyncio.Future[Answer]:
        """Queue ``request`` for the next batch and return the future of its answer.

        Awaiting the future is :meth:`call`; a caller that would otherwise wrap the
        call in a task of its own (to bound it by a timer) can wait on the future
        itself. Cancelling the future is giving up: not sent yet, the request never
        will be; sent, its answer is dropped.
        """
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting.append((request, future))
        if self._sender is None:
            # Sent from a task of its own, never from a caller's: a caller that gives up
            # (a timeout, a cancellation) cancels only its own future, not a statement
            # that carries other callers' calls. Starting it on the loop's next turn
            # also lets the calls made on this turn go out with this one.
            self._sender = asyncio.create_task(self._send_all())
        return future

    async def _send_all(self) -> None:
        try:
            while self._waiting:
                batch = [(r, f) for r, f in self._waiting[: self._max_batch] if not f.done()]
                del self._waiting[: self._max_batch]
                if batch:
                    await self._send(batch)
        finally:
            self._sender = None

    async def _send(self, batch: list[tuple[Request, asyncio.Future[Answer]]]) -> None:
        try:
            answers = await self._run_batch([request for request, _ in batch])
            _check_count(len(batch), answers)
        except asyncio.CancelledError:
            for _, future in batch:
                if not future.done():
                    future.cancel()
            raise
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for n, (_, future) in enumerate(batch):  # as many answers as calls: checked above
            if not future.done():
                future.set_result(answers[n])


def _check_count(calls: int, answers: Sequence[object]) -> None:
    if len(answers) != calls:
        raise RuntimeError(f"a batch of {calls} calls got {len(answers)} answers")
