"""What a handler may rely on, and the helpers every handler shares.

The executor hands every handler a context (``safelight.work.context.HandlerContext``,
re-exported here with ``Handler``, the engine's one definition of both) with the item,
the clock, a logger, ``progress``, ``cancelled``, ``ensure_alive`` and ``fenced``.

The rules every handler here keeps:

- it writes the database only inside ``ctx.fenced()``, so an attempt that lost its
  item writes nothing;
- it calls ``ctx.ensure_alive()`` right before every file write, rename or delete, so
  an attempt that must stop touches no file from then on;
- it checks ``ctx.cancelled`` between steps (``stop_if_cancelled``);
- a heavy kind's handler (its ``Kind`` row's ``heavy``) checks ``ctx.winding_down`` at
  its clean points, and once it is set starts nothing new, finishes what it started
  and raises :class:`WoundDown`: the item goes on at the next window (ADR 0060);
- a payload it cannot use is a :class:`MalformedPayload`, whose message the executor
  records as the item's error (the payload's shape, its kind's model, is checked at
  enqueue and again before the handler runs, ``Kind.bind``; the handler checks only
  what needs the disk or the database);
- a failure that may pass (the storage went away for a while) is a ``Retryable``
  (:class:`HandlerUnavailable`, :func:`handler_failure`), which the executor retries
  after the kind's backoff; an ``OSError`` of such a kind that escapes is retried too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from uuid import UUID

from safelight.work.context import Handler, HandlerContext
from safelight.work.errors import AttemptStopped, Retryable, WorkError, WoundDown
from safelight.work.retry import is_retryable

__all__ = [
    "Handler",
    "HandlerContext",
    "HandlerFailed",
    "HandlerUnavailable",
    "MalformedPayload",
    "ThreadAlive",
    "WoundDown",
    "config_id_of",
    "handler_failure",
    "stop_if_cancelled",
]


class MalformedPayload(WorkError, ValueError):
    """The item's payload is not what its kind takes; the message says what is wrong."""


class HandlerFailed(WorkError):
    """The handler cannot do its work at all (the message says why); the item fails."""


class HandlerUnavailable(HandlerFailed, Retryable):
    """The handler cannot do its work now, for a reason that may pass (the storage or
    the network went away for a while); the item is tried again after its kind's
    backoff, and fails once its kind's attempts are spent (``safelight.work.retry``)."""


def handler_failure(message: str, cause: BaseException) -> HandlerFailed:
    """``message`` as the item's error: :class:`HandlerUnavailable` when ``cause`` (an
    I/O error of a NAS mount, say) may pass, else :class:`HandlerFailed`."""
    if is_retryable(cause):
        return HandlerUnavailable(message)
    return HandlerFailed(message)


STOPPED = "stopped: the attempt was asked to stop"
"""The error of an attempt a handler stopped because the executor asked it to."""


def stop_if_cancelled(ctx: HandlerContext) -> None:
    """Stop between steps once the executor asked the attempt to stop.

    ``ensure_alive()`` raises with the executor's own reason; should it not (the event
    was set first), the attempt still stops here.
    """
    if ctx.cancelled.is_set():
        ctx.ensure_alive()
        raise AttemptStopped(STOPPED)


def config_id_of(ctx: HandlerContext) -> UUID:
    """The item's storage config; a scoped kind's item always has one (enqueue checks)."""
    config_id = ctx.item.storage_config_id
    if config_id is None:
        raise MalformedPayload(f"a {ctx.item.kind} item needs a storage config")
    return config_id


class ThreadAlive:
    """``ensure_alive`` for code running in a worker thread.

    The context's own ``ensure_alive`` is not thread-safe (it may stop the attempt, which
    touches the event loop's objects), so a thread asks the loop to run it and waits for
    the answer: the same check, exactly, right before each rename or delete. ``check`` is
    the cheap variant for tight loops (between chunks of a hash): it only reads whether
    the attempt has been asked to stop.
    """

    def __init__(self, ctx: HandlerContext) -> None:
        self._ctx = ctx
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def check(self) -> None:
        if self._ctx.cancelled.is_set():
            raise AttemptStopped(STOPPED)

    def ensure_alive(self) -> None:
        if threading.get_ident() == self._loop_thread:
            self._ctx.ensure_alive()
            return
        self.check()
        answer: concurrent.futures.Future[None] = concurrent.futures.Future()

        def ask() -> None:
            try:
                self._ctx.ensure_alive()
            except BaseException as error:
                answer.set_exception(error)
            else:
                answer.set_result(None)

        try:
            self._loop.call_soon_threadsafe(ask)
        except RuntimeError:  # the loop is closed: nobody owns the attempt any more
            raise AttemptStopped("stopped: the event loop has closed") from None
        answer.result()
