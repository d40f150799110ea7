"""Errors of the engine, each with a message a user can act on."""

from __future__ import annotations

import enum

import psycopg
import psycopg_pool


class WorkError(Exception):
    """Base of every error the engine raises on purpose."""


class InvalidWorkItem(WorkError, ValueError):
    """Enqueue refused an item: unknown kind, bad payload, bad or inactive config."""


class Retryable(WorkError):
    """A failure that may pass: raised by a handler that knows it (a share that is not
    mounted), or mixed into its own error type. The item is tried again after its kind's
    backoff, until its kind's maximum attempts (:mod:`safelight.work.retry`)."""


class StopReason(enum.StrEnum):
    """Why an attempt was stopped before its handler finished on its own.

    Listed from the mildest to the gravest: a request to stop (shutdown, cancel) can
    give way to a loss of ownership (self-stop, lost), never the other way round.
    """

    SHUTDOWN = "shutting down"  # the Worker is stopping; the item goes back to the queue
    CANCEL_REQUESTED = "cancel requested"  # an operator cancelled the running item
    SELF_STOPPED = "self-stopped"  # no successful heartbeat for half a lease
    LOST = "lost"  # the database says the item is no longer this attempt's


class AttemptStopped(WorkError):
    """The attempt must stop now and write nothing more (lost, cancelled, self-stopped,
    shutting down). Raised by ``ensure_alive()`` and the fenced transaction.

    It derives from ``Exception``, so a handler that catches ``Exception`` around one
    file must re-raise it (or at least go on to write nothing): the executor decides the
    outcome from why the attempt stopped, never from what the handler raised.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WoundDown(WorkError):
    """Raised by a handler that stopped early because its attempt was asked to wind down
    (``HandlerContext.winding_down``: its kind's heavy hours ended), with all it did
    kept: the item goes back to the queue until the window opens again, counting
    neither a failure nor a stall (ADR 0060)."""

    def __init__(self, reason: str = "stopped at the end of heavy hours") -> None:
        super().__init__(reason)


class AttemptLost(AttemptStopped):
    """The database says this attempt no longer owns its item."""

    def __init__(self, reason: str = "lost: the item is no longer this attempt's") -> None:
        super().__init__(reason)


# A handler that raised one of these lost its way to the database (connection gone,
# server restarting, a statement cancelled, a deadlock), not its work: the item goes back
# to the queue counting a stall (outcome.Interrupted) instead of failing for good, and
# fails once it has stalled max_stalls times.
TRANSIENT_DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.OperationalError,
    psycopg.InterfaceError,
    psycopg_pool.PoolTimeout,
)

# What a Worker process's tasks survive by waiting and trying again (work.backoff): the
# database being away (the errors above), the network (OSError), a call cut short by its
# own timeout. Anything else is a bug, and ends the process (docs/operations.md).
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (
    *TRANSIENT_DATABASE_ERRORS,
    OSError,
    TimeoutError,
)


def describe(error: BaseException) -> str:
    """An exception as a work item's error records it: its type and its whole message,
    no traceback."""
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def describe_briefly(error: BaseException) -> str:
    """An exception for one log line: its type and the first line of its message
    (psycopg's run to several)."""
    lines = str(error).splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
